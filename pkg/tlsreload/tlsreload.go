// Package tlsreload builds a server *tls.Config whose certificate and
// client CA are reloaded from files while the server runs.
//
// Plain (non-TLS) serving is the default: a caller whose Files are not
// Enabled simply does not use this package.
//
// Why not a library: sigs.k8s.io/controller-runtime/pkg/certwatcher only
// reloads the certificate/key pair (not the client CA, which lives on the
// tls.Config and needs GetConfigForClient), logs via logr, and would add
// controller-runtime, k8s.io/apimachinery, fsnotify and their requirements
// to go.mod. gRPC's credentials/tls/certprovider/pemfile needs no new
// module but logs via grpclog (including the PEM contents when the key
// pair does not parse) and does not validate the files synchronously at
// start. The standard library is enough for the ~150 lines needed here.
//
// Why polling file contents: a goroutine re-reads the (small) files every
// few seconds and reloads when the bytes differ. Unlike an fsnotify watch
// this needs no dependency and works the same for plain files, Kubernetes
// secret mounts (which atomically swap a "..data" symlink) and any file
// system; unlike comparing mtime/size it cannot miss a rewrite that lands
// in the same coarse timestamp tick. A new certificate is picked up by the
// next handshake after the poll; existing connections are not affected.
package tlsreload

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"time"
)

// DefaultPollInterval is how often the files are re-read.
const DefaultPollInterval = 10 * time.Second

// Files names the PEM files for server TLS.
type Files struct {
	CertFile string // server certificate chain, leaf first
	KeyFile  string // private key of the leaf
	// ClientCAFile, if set, holds the CA bundle client certificates must
	// chain to; clients without such a certificate are refused
	// (tls.RequireAndVerifyClientCert).
	ClientCAFile string
}

// Enabled reports whether any file is set, i.e. whether the server should
// use TLS at all. NewServerConfig rejects a partial configuration.
func (f Files) Enabled() bool {
	return f.CertFile != "" || f.KeyFile != "" || f.ClientCAFile != ""
}

// NewServerConfig loads files and returns a server TLS config (minimum TLS
// 1.2) that serves their current contents. Until ctx is done, the files
// are polled for changes; a change that does not load (half-written file,
// key mismatch, ...) is logged and the previous good material is kept.
// The initial load must succeed; its error names the offending file.
//
// The returned config selects the material in GetConfigForClient. The
// per-connection config has no NextProtos: gRPC's credentials.NewTLS adds
// "h2" to it, other servers needing ALPN must wrap GetConfigForClient.
// A nil logger means slog.Default().
func NewServerConfig(ctx context.Context, files Files, logger *slog.Logger, opts ...Option) (*tls.Config, error) {
	return newServerConfig(ctx, files, logger, DefaultPollInterval, opts...)
}

// An Option adjusts NewServerConfig.
type Option func(*reloader)

// OnCertificate has f called with the leaf of the serving certificate each
// time one is loaded: once before NewServerConfig returns, then after every
// reload that replaced it. Its use is to publish facts of the certificate,
// such as its expiry, that an operator should alert on; f runs on the
// polling goroutine and must not block.
func OnCertificate(f func(leaf *x509.Certificate)) Option {
	return func(r *reloader) { r.onCert = append(r.onCert, f) }
}

func newServerConfig(ctx context.Context, files Files, logger *slog.Logger, interval time.Duration, opts ...Option) (*tls.Config, error) {
	if files.CertFile == "" || files.KeyFile == "" {
		return nil, errors.New("tlsreload: both a certificate file and a key file are required")
	}
	if logger == nil {
		logger = slog.Default()
	}
	r := &reloader{
		logger: logger,
		cert: source[*tls.Certificate]{
			paths: []string{files.CertFile, files.KeyFile},
			parse: parseKeyPair,
		},
	}
	for _, o := range opts {
		o(r)
	}
	if files.ClientCAFile != "" {
		r.ca = &source[*x509.CertPool]{paths: []string{files.ClientCAFile}, parse: parseCAs}
	}
	if _, err := r.cert.update(); err != nil {
		return nil, fmt.Errorf("tlsreload: %w", err)
	}
	if r.ca != nil {
		if _, err := r.ca.update(); err != nil {
			return nil, fmt.Errorf("tlsreload: %w", err)
		}
	}
	r.publish()
	r.certLoaded()
	go r.run(ctx, interval)

	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.current.Load(), nil
		},
	}, nil
}

// reloader owns the sources; after start only its run goroutine touches
// them, handshakes only read current.
type reloader struct {
	logger  *slog.Logger
	cert    source[*tls.Certificate]
	ca      *source[*x509.CertPool] // nil without client authentication
	current atomic.Pointer[tls.Config]
	onCert  []func(*x509.Certificate)
}

// certLoaded tells the OnCertificate hooks about the current leaf.
func (r *reloader) certLoaded() {
	for _, f := range r.onCert {
		f(r.cert.value.Leaf)
	}
}

func (r *reloader) run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			r.reload()
		}
	}
}

func (r *reloader) reload() {
	certChanged, err := r.cert.update()
	if err != nil {
		r.logger.Error("TLS certificate reload failed, keeping the previous one", "err", err)
	}
	if certChanged {
		leaf := r.cert.value.Leaf
		r.logger.Info("TLS certificate reloaded", "file", r.cert.paths[0],
			"subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	}
	changed := certChanged
	if r.ca != nil {
		caChanged, err := r.ca.update()
		if err != nil {
			r.logger.Error("TLS client CA reload failed, keeping the previous one", "err", err)
		}
		if caChanged {
			r.logger.Info("TLS client CA reloaded", "file", r.ca.paths[0])
		}
		changed = changed || caChanged
	}
	if changed {
		r.publish()
	}
	if certChanged {
		r.certLoaded()
	}
}

// publish installs a config built from the current material. Session
// resumption stays enabled: crypto/tls re-verifies a resumed session's
// client chain against the current ClientCAs.
func (r *reloader) publish() {
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*r.cert.value},
	}
	if r.ca != nil {
		c.ClientCAs = r.ca.value
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	r.current.Store(c)
}

// source is TLS material loaded from files: the bytes last tried and the
// value last loaded successfully.
type source[T any] struct {
	paths []string
	parse func(paths []string, data [][]byte) (T, error)
	seen  [][]byte
	value T
}

// update re-reads the files and, if their contents changed since the last
// attempt, parses them. It reports whether value was replaced. A content
// that fails to parse is reported once and not retried until it changes.
func (s *source[T]) update() (bool, error) {
	data := make([][]byte, len(s.paths))
	for i, p := range s.paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return false, err // *PathError names the file
		}
		data[i] = b
	}
	if slices.EqualFunc(data, s.seen, bytes.Equal) {
		return false, nil
	}
	s.seen = data
	v, err := s.parse(s.paths, data)
	if err != nil {
		return false, err
	}
	s.value = v
	return true, nil
}

func parseKeyPair(paths []string, data [][]byte) (*tls.Certificate, error) {
	// Strict parse first: tls.X509KeyPair silently ignores a truncated
	// trailing block, which would serve a half-written chain.
	certs, err := parseCerts(data[0])
	if err != nil {
		return nil, fmt.Errorf("certificate file %s: %w", paths[0], err)
	}
	if b, _ := pem.Decode(data[1]); b == nil {
		return nil, fmt.Errorf("key file %s: no PEM data", paths[1])
	}
	cert, err := tls.X509KeyPair(data[0], data[1])
	if err != nil {
		return nil, fmt.Errorf("certificate file %s with key file %s: %w", paths[0], paths[1], err)
	}
	cert.Leaf = certs[0]
	return &cert, nil
}

func parseCAs(paths []string, data [][]byte) (*x509.CertPool, error) {
	certs, err := parseCerts(data[0])
	if err != nil {
		return nil, fmt.Errorf("client CA file %s: %w", paths[0], err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// parseCerts returns the CERTIFICATE blocks of PEM data (other block
// types are skipped, as tls.X509KeyPair does). Unlike x509.CertPool's
// AppendCertsFromPEM it fails on anything unparseable, such as a
// truncated last block.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := bytes.TrimSpace(data); len(rest) > 0; rest = bytes.TrimSpace(rest) {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return nil, errors.New("not PEM or truncated PEM data")
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}
