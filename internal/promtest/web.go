package promtest

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

// harnessUser is the basic-auth user the harness itself queries as.
const harnessUser = "promtest"

// webFiles is a server's --web.config.file and what it refers to.
type webFiles struct {
	path     string
	scheme   string
	ca       *tlstest.CA
	tls      map[string]string // tls_server_config, if any
	password string            // the harness user's
	basic    bool
}

func newWebFiles(t testing.TB, dir string, web *Web) (*webFiles, error) {
	if web == nil {
		return nil, nil
	}
	w := &webFiles{path: filepath.Join(dir, "web.yml"), scheme: "http", ca: web.CA, basic: len(web.Users) > 0}
	if web.CA != nil {
		certPEM, keyPEM := web.CA.Issue(t, "prometheus", "127.0.0.1", "localhost")
		tlstest.WriteFiles(t, dir, map[string][]byte{"web.crt": certPEM, "web.key": keyPEM})
		w.scheme = "https"
		w.tls = map[string]string{"cert_file": filepath.Join(dir, "web.crt"), "key_file": filepath.Join(dir, "web.key")}
	}
	if w.basic {
		w.password = rand.Text()
	}
	return w, w.write(web.Users)
}

// write writes the web configuration; Prometheus reads it on every
// request, so a rewrite takes effect at once.
func (w *webFiles) write(users map[string]string) error {
	cfg := map[string]any{}
	if w.tls != nil {
		cfg["tls_server_config"] = w.tls
	}
	if w.basic {
		hashed := map[string]string{}
		all := map[string]string{harnessUser: w.password}
		for u, p := range users {
			all[u] = p
		}
		for u, p := range all {
			// The lowest cost: the server checks every request, and the
			// hashes only ever guard a test's loopback server.
			h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
			if err != nil {
				return err
			}
			hashed[u] = string(h)
		}
		cfg["basic_auth_users"] = hashed
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	// Written whole and renamed, so the server never reads half a file.
	tmp := w.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, w.path)
}

// client is the harness's own: it trusts the CA and sends its user.
func (w *webFiles) client() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if w.ca != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: w.ca.Pool(), MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = t
	if w.basic {
		rt = basicAuth{next: t, user: harnessUser, password: w.password}
	}
	return &http.Client{Transport: rt}
}

type basicAuth struct {
	next           http.RoundTripper
	user, password string
}

func (b basicAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.SetBasicAuth(b.user, b.password)
	return b.next.RoundTrip(req)
}

// SetUsers replaces the basic-auth users the server accepts (the
// harness's own stays), as an operator rotating a password would.
func (s *Server) SetUsers(t testing.TB, users map[string]string) {
	t.Helper()
	if s.web == nil || !s.web.basic {
		t.Fatal("promtest: SetUsers on a server started without Web.Users")
	}
	if err := s.web.write(users); err != nil {
		t.Fatal(fmt.Errorf("promtest: %w", err))
	}
}
