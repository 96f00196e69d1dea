package tlsreload

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

const testInterval = 5 * time.Millisecond

// fixture is a TLS server on loopback whose files live in dir.
type fixture struct {
	ca      *tlstest.CA
	dir     string
	files   Files
	content map[string][]byte // current file contents by name
	addr    string
	logs    *syncBuffer
}

// start writes a server certificate (CN "server-1") and, if clientCA is
// non-nil, a client CA file, then serves NewServerConfig's config.
// secret selects the Kubernetes-style symlinked layout.
func start(t *testing.T, clientCA *tlstest.CA, secret bool) *fixture {
	t.Helper()
	f := &fixture{ca: tlstest.NewCA(t), dir: t.TempDir(), content: map[string][]byte{}, logs: &syncBuffer{}}
	f.files = Files{CertFile: filepath.Join(f.dir, "tls.crt"), KeyFile: filepath.Join(f.dir, "tls.key")}
	certPEM, keyPEM := f.ca.Issue(t, "server-1", "127.0.0.1", "localhost")
	update := map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM}
	if clientCA != nil {
		f.files.ClientCAFile = filepath.Join(f.dir, "ca.crt")
		update["ca.crt"] = clientCA.CertPEM
	}
	f.write(t, secret, update)

	logger := slog.New(slog.NewTextHandler(f.logs, nil))
	cfg, err := newServerConfig(t.Context(), f.files, logger, testInterval)
	if err != nil {
		t.Fatal(err)
	}
	f.addr = serve(t, cfg)
	return f
}

// write replaces the files in update: in place, or as a whole new secret
// version holding all files.
func (f *fixture) write(t *testing.T, secret bool, update map[string][]byte) {
	t.Helper()
	for name, data := range update {
		f.content[name] = data
	}
	if secret {
		tlstest.WriteSecret(t, f.dir, f.content)
	} else {
		tlstest.WriteFiles(t, f.dir, update)
	}
}

// serve accepts TLS connections on loopback; after a successful handshake
// it writes "ok" and closes.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if c.(*tls.Conn).Handshake() == nil {
					c.Write([]byte("ok"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// clientConfig trusts f's CA and presents the given client certificates.
func (f *fixture) clientConfig(certs ...tls.Certificate) *tls.Config {
	return &tls.Config{RootCAs: f.ca.Pool(), Certificates: certs}
}

// dial connects and reads the server's "ok", which only arrives if the
// server accepted the handshake (with TLS 1.3 a refused client
// certificate only shows up on the first read).
func dial(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(conn)
	if err == nil && string(b) != "ok" {
		err = errors.New("connection closed without ok")
	}
	return conn.ConnectionState(), err
}

// servedCN returns the common name of the server certificate.
func (f *fixture) servedCN(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	cs, err := dial(f.addr, cfg)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return cs.PeerCertificates[0].Subject.CommonName
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(testInterval)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServerTLS(t *testing.T) {
	f := start(t, nil, false)
	if cn := f.servedCN(t, f.clientConfig()); cn != "server-1" {
		t.Errorf("served %q, want server-1", cn)
	}

	old := f.clientConfig()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if _, err := dial(f.addr, old); err == nil {
		t.Error("TLS 1.1 client accepted, want minimum TLS 1.2")
	}
}

func TestClientAuth(t *testing.T) {
	clientCA, otherCA := tlstest.NewCA(t), tlstest.NewCA(t)
	f := start(t, clientCA, false)

	good := clientCA.IssueKeyPair(t, "keda")
	if _, err := dial(f.addr, f.clientConfig(good)); err != nil {
		t.Errorf("client with a valid certificate refused: %v", err)
	}
	if _, err := dial(f.addr, f.clientConfig()); err == nil {
		t.Error("client without certificate accepted")
	}
	stranger := otherCA.IssueKeyPair(t, "stranger")
	if _, err := dial(f.addr, f.clientConfig(stranger)); err == nil {
		t.Error("client with a certificate from another CA accepted")
	}
}

func TestReloadCertificate(t *testing.T) {
	for _, secret := range []bool{false, true} {
		name := map[bool]string{false: "in place", true: "symlink swap"}[secret]
		t.Run(name, func(t *testing.T) {
			f := start(t, nil, secret)
			client := f.clientConfig()
			if cn := f.servedCN(t, client); cn != "server-1" {
				t.Fatalf("served %q, want server-1", cn)
			}
			certPEM, keyPEM := f.ca.Issue(t, "server-2", "127.0.0.1")
			f.write(t, secret, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})
			eventually(t, "server-2 to be served", func() bool { return f.servedCN(t, client) == "server-2" })
			if !strings.Contains(f.logs.String(), "TLS certificate reloaded") {
				t.Errorf("reload not logged:\n%s", f.logs)
			}
		})
	}
}

func TestBrokenReplacementKeepsCertificate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		broken  func(certPEM, keyPEM []byte) map[string][]byte
		wantLog string
	}{
		{"half-written certificate", func(c, _ []byte) map[string][]byte {
			return map[string][]byte{"tls.crt": c[:len(c)/2]}
		}, "truncated PEM"},
		{"empty key", func(_, _ []byte) map[string][]byte {
			return map[string][]byte{"tls.key": nil}
		}, "no PEM data"},
		// A writer that replaces the certificate before the key.
		{"certificate before key", func(c, _ []byte) map[string][]byte {
			return map[string][]byte{"tls.crt": c}
		}, "private key does not match public key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, nil, false)
			client := f.clientConfig()
			certPEM, keyPEM := f.ca.Issue(t, "server-2", "127.0.0.1")

			f.write(t, false, tc.broken(certPEM, keyPEM))
			eventually(t, "the error to be logged", func() bool { return strings.Contains(f.logs.String(), tc.wantLog) })
			if cn := f.servedCN(t, client); cn != "server-1" {
				t.Errorf("after broken replacement served %q, want server-1", cn)
			}
			if logs := f.logs.String(); !strings.Contains(logs, "level=ERROR") || strings.Contains(logs, "PRIVATE KEY") {
				t.Errorf("want an error log without key material, got:\n%s", logs)
			}

			f.write(t, false, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})
			eventually(t, "recovery to server-2", func() bool { return f.servedCN(t, client) == "server-2" })
		})
	}
}

func TestReloadClientCA(t *testing.T) {
	caA, caB := tlstest.NewCA(t), tlstest.NewCA(t)
	f := start(t, caA, true)
	clientA := f.clientConfig(caA.IssueKeyPair(t, "client-a"))
	clientA.ClientSessionCache = tls.NewLRUClientSessionCache(1)
	clientB := f.clientConfig(caB.IssueKeyPair(t, "client-b"))

	if _, err := dial(f.addr, clientA); err != nil {
		t.Fatalf("client A refused: %v", err)
	}
	if cs, err := dial(f.addr, clientA); err != nil || !cs.DidResume {
		t.Fatalf("client A second connection: err %v, resumed %v; want a resumed session", err, cs.DidResume)
	}
	if _, err := dial(f.addr, clientB); err == nil {
		t.Fatal("client B accepted before its CA is trusted")
	}

	f.write(t, true, map[string][]byte{"ca.crt": []byte("-----BEGIN CERTIFICATE-----\nMIIB")})
	eventually(t, "the CA error to be logged", func() bool { return strings.Contains(f.logs.String(), "client CA file") })
	if _, err := dial(f.addr, clientA); err != nil {
		t.Errorf("client A refused after broken CA replacement: %v", err)
	}

	f.write(t, true, map[string][]byte{"ca.crt": caB.CertPEM})
	eventually(t, "client B to be accepted", func() bool { _, err := dial(f.addr, clientB); return err == nil })
	// Client A's cached session must not bypass the new CA.
	if _, err := dial(f.addr, clientA); err == nil {
		t.Error("client A (with a cached session) accepted after its CA was removed")
	}
}

func TestStartErrors(t *testing.T) {
	ca := tlstest.NewCA(t)
	certPEM, keyPEM := ca.Issue(t, "server", "127.0.0.1")
	_, otherKey := ca.Issue(t, "other")
	dir := t.TempDir()
	tlstest.WriteFiles(t, dir, map[string][]byte{
		"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.CertPEM,
		"garbage": []byte("not a certificate"), "other.key": otherKey,
	})
	p := func(name string) string { return filepath.Join(dir, name) }

	for _, tc := range []struct {
		name  string
		files Files
		want  []string
	}{
		{"no key", Files{CertFile: p("tls.crt")}, []string{"key file"}},
		{"missing certificate", Files{p("missing.crt"), p("tls.key"), ""}, []string{p("missing.crt"), "no such file"}},
		{"certificate not PEM", Files{p("garbage"), p("tls.key"), ""}, []string{"certificate file " + p("garbage"), "not PEM"}},
		{"key not PEM", Files{p("tls.crt"), p("garbage"), ""}, []string{"key file " + p("garbage"), "no PEM data"}},
		{"key mismatch", Files{p("tls.crt"), p("other.key"), ""}, []string{p("other.key"), "does not match"}},
		{"missing client CA", Files{p("tls.crt"), p("tls.key"), p("missing-ca.crt")}, []string{p("missing-ca.crt"), "no such file"}},
		{"client CA not PEM", Files{p("tls.crt"), p("tls.key"), p("garbage")}, []string{"client CA file " + p("garbage"), "not PEM"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewServerConfig(t.Context(), tc.files, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestPollInterval checks the public default interval and that the poll
// goroutine ends with ctx, using synctest's fake clock.
func TestPollInterval(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	certPEM, keyPEM := ca.Issue(t, "server-1")
	tlstest.WriteFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})
	files := Files{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	served := func(cfg *tls.Config) string {
		c, err := cfg.GetConfigForClient(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Certificates[0].Leaf.Subject.CommonName
	}

	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel() // synctest.Test fails if the poll goroutine outlives this
		cfg, err := NewServerConfig(ctx, files, logger)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.MinVersion != tls.VersionTLS12 {
			t.Errorf("MinVersion = %x, want TLS 1.2", cfg.MinVersion)
		}
		certPEM, keyPEM := ca.Issue(t, "server-2")
		tlstest.WriteFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})

		time.Sleep(DefaultPollInterval - time.Second) // fake clock
		synctest.Wait()
		if got := served(cfg); got != "server-1" {
			t.Errorf("before the interval served %q, want server-1", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := served(cfg); got != "server-2" {
			t.Errorf("after the interval served %q, want server-2", got)
		}
	})
}

func TestFilesEnabled(t *testing.T) {
	if (Files{}).Enabled() {
		t.Error("empty Files enabled")
	}
	if !(Files{ClientCAFile: "ca.crt"}).Enabled() {
		t.Error("Files with only a client CA not enabled (must fail, not fall back to plain)")
	}
}

// TestOnCertificate checks that the hook sees the first certificate before
// NewServerConfig returns and then exactly the certificates that replaced
// it: not a broken replacement, not a change of the client CA alone.
func TestOnCertificate(t *testing.T) {
	ca, clientCA := tlstest.NewCA(t), tlstest.NewCA(t)
	dir := t.TempDir()
	certPEM, keyPEM := ca.Issue(t, "server-1")
	tlstest.WriteFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": clientCA.CertPEM})
	files := Files{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), ClientCAFile: filepath.Join(dir, "ca.crt")}
	// Unbuffered: a hook call the test does not expect blocks the poller
	// and shows up as a wrong name at the next receive.
	loaded := make(chan string)
	var first string
	hook := func(leaf *x509.Certificate) {
		if first == "" {
			first = leaf.Subject.CommonName // synchronous, before NewServerConfig returns
			return
		}
		loaded <- leaf.Subject.CommonName
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := newServerConfig(t.Context(), files, logger, testInterval, OnCertificate(hook)); err != nil {
		t.Fatal(err)
	}
	if first != "server-1" {
		t.Fatalf("first hook call saw %q, want server-1", first)
	}

	tlstest.WriteFiles(t, dir, map[string][]byte{"tls.crt": certPEM[:len(certPEM)/2]})
	tlstest.WriteFiles(t, dir, map[string][]byte{"ca.crt": tlstest.NewCA(t).CertPEM})
	certPEM, keyPEM = ca.Issue(t, "server-2")
	tlstest.WriteFiles(t, dir, map[string][]byte{"tls.key": keyPEM, "tls.crt": certPEM})
	select {
	case cn := <-loaded:
		if cn != "server-2" {
			t.Fatalf("hook saw %q, want server-2 (a broken file or a CA change must not call it)", cn)
		}
	case <-t.Context().Done():
	}
}
