package connprofile

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
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
	"golang.org/x/net/http/httpguts"
)

// The most a profile's file may hold. A credential (a token, password,
// user name, client secret or header value) is one line, a few hundred
// bytes; 16 KiB leaves room for the longest JWT. A PEM file may be a CA
// bundle (a distribution's whole bundle is about 200 KiB); 1 MiB is the
// most a Kubernetes Secret can hold. A larger file is refused without
// being read, so a file that grows by mistake cannot fill the memory.
const (
	MaxCredentialFileBytes = 16 << 10
	MaxPEMFileBytes        = 1 << 20
)

// kind is what a file must hold for its content to be used.
type kind int

const (
	kindText kind = iota // a token, password or user name: one header-safe line
	kindCA               // PEM certificates
	kindCert             // a PEM certificate
	kindKey              // a PEM private key
)

// limit is the largest file of the kind.
func (k kind) limit() (int64, string) {
	if k == kindText {
		return MaxCredentialFileBytes, "a credential file may hold at most 16 KiB"
	}
	return MaxPEMFileBytes, "a PEM file may hold at most 1 MiB"
}

// check says why content is unusable. It never quotes the content.
func (k kind) check(s string) error {
	switch k {
	case kindText:
		if s == "" {
			return errors.New("file is empty")
		}
		// Every text ends up in a header (Authorization, a header file's
		// own) or its base64: a line break would make every request fail
		// with an invalid header, so it is a bad rotation, not a value.
		if !httpguts.ValidHeaderFieldValue(s) {
			return errors.New("the value holds a line break or another control character, which no HTTP header may carry")
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

// racyWindow: a file modified this shortly before it was read may be
// modified again with the same size and modification time (a file
// system's clock ticks are coarse), so its stamp is not trusted until
// a read made later than this after the modification. 2 s is the
// coarsest tick of a common file system (FAT's).
const racyWindow = 2 * time.Second

// stamp tells a file changed without reading it: which file the path
// leads to (a Secret volume is updated by swapping a symlink, so a
// rotation is another file), its size and its modification time. The
// zero stamp matches nothing; a failed stat matches another failed stat.
type stamp struct {
	info   os.FileInfo
	failed bool
}

func (a stamp) same(b stamp) bool {
	if a.failed || b.failed {
		return a.failed && b.failed
	}
	return a.info != nil && b.info != nil && os.SameFile(a.info, b.info) &&
		a.info.Size() == b.info.Size() && a.info.ModTime().Equal(b.info.ModTime())
}

func statFile(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{failed: true}
	}
	return stamp{info: fi}
}

// entry is one file a profile reads.
type entry struct {
	profile, field, path string
	kind                 kind
	// key is a certificate's key file: the two are read, checked and
	// kept as a pair, so a half-rotated pair is never used.
	key *entry
	// mu orders the reads and bookkeeping of the entry (and of its key,
	// which shares it), so a change is read, counted and logged once.
	mu *sync.Mutex

	last    string // the last good content
	read    stamp  // the file last read, when it can be trusted not to have changed unseen
	bad     stamp  // the file whose read last failed, so one bad file is counted once
	failing bool   // the last read failed (logged once)
	paired  bool   // a key that is read with its certificate
}

// fileReader is the config.SecretManager every profile's file goes
// through: each *_file is turned into a *_ref naming an entry, so
// prometheus/common asks it, on every request, as it would have read the
// file itself. It reads the file again only when its stamp changed, and
// serves the last good content when a read fails.
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
			Help: "Reads of a connection profile's credential or certificate file that failed (missing, unreadable, too large, empty, not a header value or not PEM), once per changed file; the last good content stayed in use.",
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

// load reads and checks one file, never more than its kind's limit: the
// size is checked on the open file, and the read is bounded too, for a
// file that grows meanwhile or reports no size.
func load(e *entry) (string, stamp, error) {
	f, err := os.Open(e.path)
	if err != nil {
		return "", stamp{failed: true}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", stamp{failed: true}, err
	}
	st := stamp{info: fi}
	limit, rule := e.kind.limit()
	if fi.Size() > limit {
		return "", st, fmt.Errorf("%s is %d bytes; %s", e.path, fi.Size(), rule)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", st, err
	}
	if int64(len(data)) > limit {
		return "", st, fmt.Errorf("%s holds more than %d bytes; %s", e.path, limit, rule)
	}
	content := strings.TrimSpace(string(data)) // as prometheus/common's FileSecret
	return content, st, e.kind.check(content)
}

// read is e's content: the last read's while the file (and a
// certificate's key file) is unchanged, else the file read again.
//
// A certificate is read with its key and both are kept only if they make
// a pair. The key itself is not re-read: it is the one kept with the
// certificate, which prometheus/common always asks for first, so the two
// it gets agree even when the Secret changes in between.
func (r *fileReader) read(e *entry) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.kind == kindKey && e.paired {
		return e.last, nil
	}
	now := time.Now()
	cur := statFile(e.path)
	var keyCur stamp
	if e.key != nil {
		keyCur = statFile(e.key.path)
	}
	if cur.same(e.read) && (e.key == nil || keyCur.same(e.key.read)) {
		return e.last, nil // unchanged since a read that was used or refused
	}
	content, st, err := load(e)
	var (
		key   string
		keySt stamp
	)
	if err == nil && e.key != nil {
		if key, keySt, err = load(e.key); err != nil {
			err = fmt.Errorf("%s: %w", e.key.field, err)
		} else if _, perr := tls.X509KeyPair([]byte(content), []byte(key)); perr != nil {
			err = fmt.Errorf("with %s: %w", e.key.field, perr) // names the mismatch, never the key
		}
	}
	e.read = trusted(st, now)
	if e.key != nil {
		if keySt == (stamp{}) {
			keySt = keyCur // not read, as the certificate failed: as seen
		}
		e.key.read = trusted(keySt, now)
	}
	if err == nil {
		if e.failing {
			e.failing = false
			r.logger.Info("connection profile file readable again", "profile", e.profile, "field", e.field, "file", e.path)
		}
		e.bad = stamp{}
		e.last = content
		if e.key != nil {
			e.key.last = key
		}
		return content, nil
	}
	// os errors name the path and the cause; check's never the content.
	// The profile is named by the caller: the load, the log line's
	// attribute, or the profile's transport.
	err = fmt.Errorf("%s: %w", e.field, err)
	if !st.same(e.bad) {
		// A file read again only because its stamp was not trusted is
		// the same bad file: counted once.
		e.bad = st
		r.errors.WithLabelValues(e.profile, e.field).Inc()
	}
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

// trusted is st when it can stand for the file from now on: not when
// the file was modified within racyWindow of now, since a second
// modification in the same clock tick would keep its size and time.
func trusted(st stamp, now time.Time) stamp {
	if st.info != nil && st.info.ModTime().After(now.Add(-racyWindow)) {
		return stamp{}
	}
	return st
}

// register adds a file; adopt reads it once.
func (r *fileReader) register(profile, field, path string, k kind) (string, *entry) {
	ref := profile + "/" + field
	e := &entry{profile: profile, field: field, path: path, kind: k, mu: &sync.Mutex{}}
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
			cert.key, key.paired, key.mu = key, true, cert.mu
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
