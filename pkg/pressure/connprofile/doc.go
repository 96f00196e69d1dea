// Package connprofile holds the named connection profiles the scaler uses to
// reach a secured Prometheus (or a workload's /metrics): the credentials,
// TLS material and tenant that a ScaledObject must never carry, because
// KEDA forwards no TriggerAuthentication to an external scaler.
//
// A profile file is YAML, mounted from a Secret:
//
//	profiles:
//	  - name: team-a
//	    url: https://prometheus.monitoring.svc:9090   # or url_pattern: https://*.monitoring.svc:9090
//	    namespaces: [team-a, team-a-staging]          # "*" admits every namespace
//	    tenant: team-a                                # sent as X-Scope-OrgID unless tenant_header says otherwise
//	    timeout: 5s
//	    # prometheus/common's HTTP client settings, as in a Prometheus scrape config:
//	    basic_auth:
//	      username: barometer
//	      password_file: /etc/barometer/secrets/team-a-password
//	    tls_config:
//	      ca_file: /etc/barometer/secrets/ca.crt
//
// The HTTP client settings are prometheus/common's config.HTTPClientConfig,
// inline, so they read exactly as in a Prometheus scrape_config: basic_auth,
// authorization (or bearer_token_file), oauth2, tls_config, http_headers,
// proxy_url and friends, follow_redirects, enable_http2. The *_ref forms are
// refused: there is no secret manager behind them. One default differs:
// follow_redirects is false unless the profile sets it.
//
// # Rotation
//
// prometheus/common asks for a bearer token, password or username file on
// every request, and compares the CA, certificate and key files on every
// request, rebuilding its transport when one changed, so a rotated Secret
// is used from the next request on without a restart. Every *_file of a
// profile (and every http_headers file) is served to it through this
// package's reader, which adds three things:
//
//   - A cap: a credential file (token, password, user name, client
//     secret, header value) may hold 16 KiB (MaxCredentialFileBytes), a PEM
//     file 1 MiB (MaxPEMFileBytes, the most a Kubernetes Secret holds). A
//     larger file is refused at load, naming the profile, the file and the
//     cap, and at run time is never read.
//   - A file is read again only when it changed: its stamp, os.Stat's
//     identity (device and inode), size and modification time, differs
//     from the last read's. One stat per request, no watcher to keep
//     alive: a Secret volume is updated by swapping a symlink, which a
//     stat of the path sees at once, where an inotify watch on the old
//     file would have to be re-armed. A file modified within two seconds
//     of its read may change again within one clock tick of its file
//     system unseen, so its stamp is trusted only once a later read
//     finds it older than that.
//   - The last good content: a read that fails (missing, unreadable,
//     too large, empty, not PEM, or text no HTTP header can carry, such
//     as a token rotated to two lines) is logged once and counted once
//     per file (barometer_connection_profile_reload_errors_total), and the
//     last good content stays in use until the file is fixed. A client
//     certificate and its key are read and kept as a pair, so a
//     certificate rotated before its key never meets the old key.
//
// Every file must be readable when the profiles are loaded: a profile that
// cannot work is an error at start, not a surprise at the first sample.
//
// # Redirects and errors
//
// A profile follows no redirect unless it sets follow_redirects: true,
// and then only to a server it may be used with (its url or url_pattern
// matches the redirect's origin, or the origin and a leading part of its
// path), since its tenant header goes wherever the request goes; the
// allow-list checks only the address dialled. Credentials do not follow a
// redirect to another host even then. Every error of a profile's
// transport names the profile, and a failed TLS handshake the setting to
// look at (tls_config.ca_file, server_name, cert_file).
//
// # Who may use a profile
//
// A profile names the server it may talk to (url, or url_pattern, a
// path.Match pattern over the URL), so a ScaledObject cannot point a
// profile's credentials at a server of its choosing, and the namespaces
// whose triggers may use it. Resolve enforces both; its errors are *Error,
// carrying the trigger key at fault, and name neither credentials nor any
// other profile.
package connprofile
