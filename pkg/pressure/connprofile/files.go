package connprofile

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/config"
)

// kind is what a file must hold for its content to be used.
type kind int

const (
	kindText kind = iota // a token, password or user name: not empty
	kindCA               // PEM certificates
	kindCert             // a PEM certificate
	kindKey              // a PEM private key
)

// check says why content is unusable. It never quotes the content.
func (k kind) check(s string) error {
	switch k {
	case kindText:
		if s == "" {
			return errors.New("file is empty")
		}
	case kindCA:
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(s)) {
			return errors.New("no PEM certificate in the file")
		}
	case kindCert:
		b, _ := pem.Decode([]byte(s))
		if b == nil || b.Type != "CERTIFICATE" {
			return errors.New("no PEM certificate in the file")
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return errors.New("the PEM certificate does not parse")
		}
	case kindKey:
		b, _ := pem.Decode([]byte(s))
		if b == nil || !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			return errors.New("no PEM private key in the file")
		}
	}
	return nil
}

// entry is one file a profile reads.
type entry struct {
	profile, field, path string
	kind                 kind
	// key is a certificate's key file: the two are read, checked and
	// kept as a pair, so a half-rotated pair is never used.
	key *entry

	last    string // the last good content
	failing bool   // the last read failed (logged once)
	paired  bool   // a key that is read with its certificate
}

// fileReader is the config.SecretManager every profile's file goes
// through: each *_file is turned into a *_ref naming an entry, so
// prometheus/common asks it, on every request, as it would have read the
// file itself. It re-reads the file each time, and serves the last good
// content when a read fails.
type fileReader struct {
	logger *slog.Logger
	errors *prometheus.CounterVec

	mu      sync.Mutex
	entries map[string]*entry // by ref
}

func newFileReader(logger *slog.Logger) *fileReader {
	return &fileReader{
		logger: logger,
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_connection_profile_reload_errors_total",
			Help: "Reads of a connection profile's credential or certificate file that failed (missing, unreadable, empty or not PEM); the last good content stayed in use.",
		}, []string{"profile", "field"}),
		entries: map[string]*entry{},
	}
}

// Fetch implements config.SecretManager.
func (r *fileReader) Fetch(_ context.Context, ref string) (string, error) {
	r.mu.Lock()
	e, ok := r.entries[ref]
	r.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("connection profile: unknown file reference %q", ref)
	}
	return r.read(e)
}

// load reads and checks one file.
func load(e *entry) (string, error) {
	data, err := os.ReadFile(e.path)
	content := strings.TrimSpace(string(data)) // as prometheus/common's FileSecret
	if err == nil {
		err = e.kind.check(content)
	}
	return content, err
}

// read re-reads e's file. Concurrent requests may read it concurrently;
// the lock only orders the bookkeeping.
//
// A certificate is read with its key and both are kept only if they make
// a pair. The key itself is not re-read: it is the one kept with the
// certificate, which prometheus/common always asks for first, so the two
// it gets agree even when the Secret changes in between.
func (r *fileReader) read(e *entry) (string, error) {
	if e.kind == kindKey && e.paired {
		r.mu.Lock()
		defer r.mu.Unlock()
		return e.last, nil
	}
	content, err := load(e)
	var key string
	if err == nil && e.key != nil {
		if key, err = load(e.key); err != nil {
			err = fmt.Errorf("%s: %w", e.key.field, err)
		} else if _, perr := tls.X509KeyPair([]byte(content), []byte(key)); perr != nil {
			err = fmt.Errorf("with %s: %w", e.key.field, perr) // names the mismatch, never the key
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		if e.failing {
			e.failing = false
			r.logger.Info("connection profile file readable again", "profile", e.profile, "field", e.field, "file", e.path)
		}
		e.last = content
		if e.key != nil {
			e.key.last = key
		}
		return content, nil
	}
	// os errors name the path and the cause; check's never the content.
	err = fmt.Errorf("connection profile %q: %s: %w", e.profile, e.field, err)
	r.errors.WithLabelValues(e.profile, e.field).Inc()
	if e.last == "" {
		return "", err
	}
	if !e.failing {
		e.failing = true
		r.logger.Warn("connection profile file unusable; the last good content stays in use until it is fixed",
			"profile", e.profile, "field", e.field, "file", e.path, "err", err)
	}
	return e.last, nil
}

// register adds a file; adopt reads it once.
func (r *fileReader) register(profile, field, path string, k kind) (string, *entry) {
	ref := profile + "/" + field
	e := &entry{profile: profile, field: field, path: path, kind: k}
	r.mu.Lock()
	r.entries[ref] = e
	r.mu.Unlock()
	return ref, e
}

// adopt moves every file of hc into the reader, as refs, and returns the
// http_headers files, which prometheus/common reads itself (they have no
// ref form), taken out of hc for headerTransport to add. A ref already
// in hc is refused: nothing stands behind it.
func (r *fileReader) adopt(profile string, hc *config.HTTPClientConfig) (map[string][]string, error) {
	var (
		errs    []error
		entries []*entry
	)
	// move registers *file under field and points *ref at it.
	move := func(field string, file, ref *string, k kind) *entry {
		switch {
		case *ref != "":
			errs = append(errs, fmt.Errorf("%s: the *_ref forms are not supported; use the *_file form", strings.TrimSuffix(field, "_file")+"_ref"))
		case *file != "":
			name, e := r.register(profile, field, *file, k)
			*file, *ref = "", name
			entries = append(entries, e)
			return e
		}
		return nil
	}
	tlsFiles := func(prefix string, t *config.TLSConfig) {
		move(prefix+"ca_file", &t.CAFile, &t.CARef, kindCA)
		cert := move(prefix+"cert_file", &t.CertFile, &t.CertRef, kindCert)
		key := move(prefix+"key_file", &t.KeyFile, &t.KeyRef, kindKey)
		if cert != nil && key != nil {
			cert.key, key.paired = key, true
		}
	}
	if a := hc.BasicAuth; a != nil {
		move("basic_auth.username_file", &a.UsernameFile, &a.UsernameRef, kindText)
		move("basic_auth.password_file", &a.PasswordFile, &a.PasswordRef, kindText)
	}
	if a := hc.Authorization; a != nil { // bearer_token_file became one in Validate
		move("authorization.credentials_file", &a.CredentialsFile, &a.CredentialsRef, kindText)
	}
	if o := hc.OAuth2; o != nil {
		move("oauth2.client_secret_file", &o.ClientSecretFile, &o.ClientSecretRef, kindText)
		move("oauth2.client_certificate_key_file", &o.ClientCertificateKeyFile, &o.ClientCertificateKeyRef, kindKey)
		tlsFiles("oauth2.tls_config.", &o.TLSConfig)
	}
	tlsFiles("tls_config.", &hc.TLSConfig)

	var headerFiles map[string][]string
	if hc.HTTPHeaders != nil {
		headers := make(map[string]config.Header, len(hc.HTTPHeaders.Headers))
		for name, h := range hc.HTTPHeaders.Headers {
			for i, f := range h.Files {
				ref, e := r.register(profile, fmt.Sprintf("http_headers.%s.files[%d]", name, i), f, kindText)
				entries = append(entries, e)
				if headerFiles == nil {
					headerFiles = map[string][]string{}
				}
				headerFiles[name] = append(headerFiles[name], ref)
			}
			h.Files = nil
			headers[name] = h
		}
		hc.HTTPHeaders = &config.Headers{Headers: headers}
	}
	// Every file is read now: a profile that cannot work fails to load.
	for _, e := range entries {
		if _, err := r.read(e); err != nil {
			errs = append(errs, err)
		}
	}
	return headerFiles, errors.Join(errs...)
}

// headerTransport adds what prometheus/common's transport does not: the
// http_headers files (through the reader, so with the last good value) and
// the tenant header.
type headerTransport struct {
	next         http.RoundTripper
	reader       *fileReader
	files        map[string][]string // header name -> refs
	tenantHeader string
	tenant       string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	// File headers may be credentials (an API key): like prometheus/common's
	// own, they do not follow a redirect to another host.
	files := t.files
	if crossHostRedirect(req) {
		files = nil
	}
	for name, refs := range files {
		for _, ref := range refs {
			v, err := t.reader.Fetch(req.Context(), ref)
			if err != nil {
				return nil, err
			}
			req.Header.Add(name, v)
		}
	}
	if t.tenant != "" {
		req.Header.Set(t.tenantHeader, t.tenant)
	}
	return t.next.RoundTrip(req)
}

// crossHostRedirect says req follows a redirect away from the host first
// asked (the client sets Response on a redirected request).
func crossHostRedirect(req *http.Request) bool {
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	return first != req && !strings.EqualFold(first.URL.Host, req.URL.Host)
}

// CloseIdleConnections passes on to the transport that holds them.
func (t *headerTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// dialer vets every address it dials with control, as the sources' own
// dialers do.
func dialer(control func(string, string, syscall.RawConn) error) *net.Dialer {
	return &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: control}
}
