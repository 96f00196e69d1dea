package receiver

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v2"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// MaxTokenFileBytes caps a token file: a larger one is refused, never
// read whole.
const MaxTokenFileBytes = 16 << 10

// AnyNamespace in a credential's namespaces admits every namespace, for a
// cluster-wide collector.
const AnyNamespace = "*"

// Credentials are who may push, and where. The file is YAML:
//
//	credentials:
//	  - name: team-a
//	    token_file: /etc/barometer/otlp/team-a.token
//	    namespaces: [team-a]
//	  - name: cluster-collector
//	    client_certificate: otel-collector.observability.svc
//	    namespaces: ["*"]
//
// A credential is a bearer token (the file's content, whitespace trimmed)
// or a client certificate name (matched against the verified certificate's
// common name, DNS and URI names). Relative file names are relative to the
// file's directory.
type Credentials struct {
	creds  []*credential
	errors prometheus.Counter
	log    *slog.Logger
}

type credential struct {
	name       string
	token      *credentialToken // nil for a certificate credential
	certName   string
	namespaces []string
	any        bool
}

type fileCredential struct {
	Name              string   `yaml:"name"`
	TokenFile         string   `yaml:"token_file"`
	ClientCertificate string   `yaml:"client_certificate"`
	Namespaces        []string `yaml:"namespaces"`
}

// LoadCredentials reads the credentials file at path. Every token file
// must be readable now: a credential that cannot work is an error at
// start. reg receives barometer_otlp_credential_file_errors_total.
func LoadCredentials(path string, reg prometheus.Registerer, logger *slog.Logger) (*Credentials, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("otlp credentials: %w", err)
	}
	return ParseCredentials(data, filepath.Dir(path), reg, logger)
}

// ParseCredentials reads a credentials file's content; dir anchors
// relative token file names.
func ParseCredentials(data []byte, dir string, reg prometheus.Registerer, logger *slog.Logger) (*Credentials, error) {
	var f struct {
		Credentials []fileCredential `yaml:"credentials"`
	}
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("otlp credentials: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Credentials{
		log: logger,
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "barometer_otlp_credential_file_errors_total",
			Help: "Token file reads that failed; the last good token stays in use.",
		}),
	}
	if len(f.Credentials) == 0 {
		return nil, errors.New("otlp credentials: no credentials: every push would be refused (allowed: a list under credentials)")
	}
	seen := map[string]bool{}
	for i, fc := range f.Credentials {
		cr, err := c.build(fc, dir)
		if err != nil {
			return nil, fmt.Errorf("otlp credentials: credentials[%d] %q: %w", i, fc.Name, err)
		}
		if seen[cr.name] {
			return nil, fmt.Errorf("otlp credentials: credentials[%d]: name %q used twice", i, fc.Name)
		}
		seen[cr.name] = true
		c.creds = append(c.creds, cr)
	}
	if reg != nil {
		if err := reg.Register(c.errors); err != nil {
			return nil, fmt.Errorf("otlp credentials metrics: %w", err)
		}
	}
	return c, nil
}

func (c *Credentials) build(fc fileCredential, dir string) (*credential, error) {
	cr := &credential{name: fc.Name, certName: fc.ClientCertificate}
	if fc.Name == "" {
		return nil, errors.New("name: empty (allowed: any name, unique in the file)")
	}
	if (fc.TokenFile == "") == (fc.ClientCertificate == "") {
		return nil, errors.New("exactly one of token_file and client_certificate must be set")
	}
	if len(fc.Namespaces) == 0 {
		return nil, errors.New(`namespaces: empty (allowed: namespace names, or "*" for every namespace)`)
	}
	for _, ns := range fc.Namespaces {
		switch {
		case ns == AnyNamespace:
			cr.any = true
		case ns == "":
			return nil, errors.New("namespaces: an empty name")
		default:
			cr.namespaces = append(cr.namespaces, ns)
		}
	}
	if fc.TokenFile != "" {
		path := fc.TokenFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		cr.token = &credentialToken{TokenFile: NewTokenFile(path)}
		if _, _, _, err := cr.token.Current(); err != nil {
			return nil, fmt.Errorf("token_file: %w", err)
		}
	}
	return cr, nil
}

// TokenFile is a bearer token read from a file, re-read only when the
// file changed (its size, modification time or identity), so a rotated
// Secret is used from the next call on. A read that fails keeps the last
// good token. Safe for concurrent use; the receiver's credentials and the
// scaler's peer token read theirs through it.
type TokenFile struct {
	path string

	mu   sync.Mutex
	stat os.FileInfo
	raw  string
	hash [sha256.Size]byte
	ok   bool
}

// NewTokenFile reads the token at path when first asked.
func NewTokenFile(path string) *TokenFile { return &TokenFile{path: path} }

// Current returns the token and its hash, re-reading the file if it
// changed; ok says there is a token (the last good one when the read
// failed), err why the read failed.
func (t *TokenFile) Current() (raw string, hash [sha256.Size]byte, ok bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	err = t.refresh()
	return t.raw, t.hash, t.ok, err
}

// refresh re-reads the file if it changed; t.mu is held.
func (t *TokenFile) refresh() error {
	st, err := os.Stat(t.path)
	if err != nil {
		return err
	}
	if t.stat != nil && os.SameFile(st, t.stat) && st.Size() == t.stat.Size() && st.ModTime().Equal(t.stat.ModTime()) {
		return nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxTokenFileBytes+1))
	if err != nil {
		return err
	}
	if len(data) > MaxTokenFileBytes {
		return fmt.Errorf("%s: larger than %d bytes", t.path, MaxTokenFileBytes)
	}
	token := bytes.TrimSpace(data)
	if len(token) == 0 {
		return fmt.Errorf("%s: empty", t.path)
	}
	t.stat, t.raw, t.hash, t.ok = st, string(token), sha256.Sum256(token), true
	return nil
}

// credentialToken is a credential's TokenFile, and whether its last read
// failed (logged once until it reads again).
type credentialToken struct {
	*TokenFile
	failing atomic.Bool
}

// current returns the token's hash, re-reading the file if it changed.
func (t *credentialToken) current(c *Credentials, name string) ([sha256.Size]byte, bool) {
	_, hash, ok, err := t.Current()
	switch {
	case err != nil && !t.failing.Swap(true):
		c.errors.Inc()
		c.log.Warn("otlp credential: token file unreadable, keeping the last good token", "credential", name, "err", err)
	case err != nil:
		c.errors.Inc()
	case t.failing.Swap(false):
		c.log.Info("otlp credential: token file readable again", "credential", name)
	}
	return hash, ok
}

// grant is what an authenticated push may write; it is a store.Grant.
type grant struct{ cred *credential }

var _ store.Grant = grant{}

// Namespace admits a claimed namespace the credential lists. A resource
// that claims none is written to the credential's only namespace, when it
// has exactly one; otherwise it is refused.
func (g grant) Namespace(claimed string) (string, bool) {
	c := g.cred
	switch {
	case claimed == "" && !c.any && len(c.namespaces) == 1:
		return c.namespaces[0], true
	case claimed == "":
		return "", false
	case c.any || slices.Contains(c.namespaces, claimed):
		return claimed, true
	}
	return "", false
}

// authenticate finds the credential of a push: its bearer token ("" when
// none), else its verified client certificate (nil when none). Every
// token credential is compared, in constant time, so the time taken does
// not tell which one came close.
func (c *Credentials) authenticate(token string, cert *x509.Certificate) (grant, bool) {
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		var found *credential
		for _, cr := range c.creds {
			if cr.token == nil {
				continue
			}
			if h, ok := cr.token.current(c, cr.name); ok && subtle.ConstantTimeCompare(h[:], sum[:]) == 1 && found == nil {
				found = cr
			}
		}
		if found != nil {
			return grant{found}, true
		}
	}
	if cert != nil {
		names := append([]string{cert.Subject.CommonName}, cert.DNSNames...)
		for _, u := range cert.URIs {
			names = append(names, u.String())
		}
		for _, cr := range c.creds {
			if cr.certName != "" && slices.Contains(names, cr.certName) {
				return grant{cr}, true
			}
		}
	}
	return grant{}, false
}
