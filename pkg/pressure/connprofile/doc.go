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
// refused: there is no secret manager behind them.
//
// # Rotation
//
// prometheus/common already re-reads a bearer token, password or username
// file on every request, and compares the CA, certificate and key files on
// every request, rebuilding its transport when one changed, so a rotated
// Secret is used from the next request on without a restart. What it does
// not do is keep the last good value: a file that is briefly missing,
// empty or not PEM fails the request. So every *_file of a profile (and
// every http_headers file) is served to it through this package's reader,
// which re-reads the file on every request as prometheus/common would, and
// when the read fails, logs it once, counts it
// (barometer_connection_profile_reload_errors_total) and hands back the
// last good content, until the file is readable again. A client
// certificate and its key are read and kept as a pair, so a certificate
// rotated before its key never meets the old key.
//
// Every file must be readable when the profiles are loaded: a profile that
// cannot work is an error at start, not a surprise at the first sample.
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
