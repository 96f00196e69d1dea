package connprofile_test

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

// TestRedirects: a profile's server answers with a redirect to another
// server: a loopback server reached by another name stands for a host of
// another namespace (the allow-list, which admits its address, is not
// what stops it). By default no redirect is followed, so neither the
// tenant nor a credential goes there; with follow_redirects: true, only a
// redirect to a server the profile may be used with is.
func TestRedirects(t *testing.T) {
	var (
		mu      sync.Mutex
		tenants []string // the tenant header each request to other carried
	)
	other := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		tenants = append(tenants, r.Header.Get("X-Scope-OrgID"))
	}))
	defer other.Close()
	elsewhere := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	// origin redirects to ?to=, else answers 200.
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
		}
	}))
	defer origin.Close()
	dir := t.TempDir()
	write(t, dir, "token", secret)
	set, err := parse(t, dir, `
profiles:
  - name: by-default
    url: `+origin.URL+`/prometheus
    namespaces: [team-a]
    tenant: team-a
    bearer_token_file: token
  - name: follows
    url: `+origin.URL+`/prometheus
    namespaces: [team-a]
    tenant: team-a
    follow_redirects: true
  - name: follows-loopback
    url_pattern: "http://127.0.0.1:*/*"
    namespaces: [team-a]
    tenant: team-a
    follow_redirects: true
`)
	if err != nil {
		t.Fatal(err)
	}
	reached := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(tenants)
	}
	for _, tc := range []struct {
		profile, to string
		wantErr     string // "" when followed
	}{
		{"by-default", elsewhere, `connection profile "by-default" does not follow redirects`},
		{"by-default", other.URL, `connection profile "by-default" does not follow redirects`},
		{"follows", elsewhere, `not a server connection profile "follows" may be used with`},
		{"follows", other.URL + "/prometheus", `not a server connection profile "follows" may be used with`},
		{"follows", origin.URL + "/prometheus/api/v1/query", ""}, // its own server, under its path
		{"follows", origin.URL + "/elsewhere", `not a server connection profile "follows" may be used with`},
		{"follows-loopback", elsewhere, `not a server connection profile "follows-loopback" may be used with`},
		{"follows-loopback", other.URL + "/api/v1/query", ""},
	} {
		p := must(set.Resolve(tc.profile, origin.URL+"/prometheus", "team-a"))
		before := reached()
		resp, err := p.Client().Get(origin.URL + "/prometheus/api/v1/query?to=" + url.QueryEscape(tc.to))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s to %s: %v, want it followed", tc.profile, tc.to, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s to %s: err = %v, want %q", tc.profile, tc.to, err, tc.wantErr)
		case tc.wantErr != "" && reached() != before:
			t.Errorf("%s to %s: the refused redirect reached the other server", tc.profile, tc.to)
		case err != nil && strings.Contains(err.Error(), secret):
			t.Errorf("%s: the error carries the token: %v", tc.profile, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tenants) != 1 || tenants[0] != "team-a" {
		t.Errorf("the other server saw tenants %q, want only the followed redirect's [team-a]", tenants)
	}
}

// TestTLSFailuresNameTheProfile: a handshake that fails, against a real
// TLS server on loopback, names the profile and the setting to look at.
func TestTLSFailuresNameTheProfile(t *testing.T) {
	ca, stranger := tlstest.NewCA(t), tlstest.NewCA(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.IssueKeyPair(t, "server", "127.0.0.1")}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	mtls := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	mtls.TLS = &tls.Config{Certificates: []tls.Certificate{ca.IssueKeyPair(t, "server", "127.0.0.1")},
		ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	mtls.Config.ErrorLog = log.New(io.Discard, "", 0)
	mtls.StartTLS()
	defer mtls.Close()

	dir := t.TempDir()
	write(t, dir, "ca.crt", string(ca.CertPEM))
	write(t, dir, "stranger.crt", string(stranger.CertPEM))
	certPEM, keyPEM := stranger.Issue(t, "barometer")
	write(t, dir, "client.crt", string(certPEM))
	write(t, dir, "client.key", string(keyPEM))
	write(t, dir, "token", secret)
	set, err := parse(t, dir, `
profiles:
  - name: no-ca-file
    url_pattern: "https://127.0.0.1:*"
    namespaces: ["*"]
    bearer_token_file: token
  - name: unknown-ca
    url_pattern: "https://127.0.0.1:*"
    namespaces: ["*"]
    bearer_token_file: token
    tls_config: {ca_file: stranger.crt}
  - name: wrong-name
    url_pattern: "https://127.0.0.1:*"
    namespaces: ["*"]
    tls_config: {ca_file: ca.crt, server_name: prometheus.monitoring.svc}
  - name: refused-client
    url_pattern: "https://127.0.0.1:*"
    namespaces: ["*"]
    tls_config: {ca_file: ca.crt, cert_file: client.crt, key_file: client.key}
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ profile, server, setting string }{
		{"no-ca-file", srv.URL, "sets no tls_config.ca_file"},
		{"unknown-ca", srv.URL, "not signed by a CA in the profile's tls_config.ca_file"},
		{"wrong-name", srv.URL, "tls_config.server_name"},
		{"refused-client", mtls.URL, "tls_config.cert_file"},
	} {
		p := must(set.Resolve(tc.profile, tc.server, "ns"))
		resp, err := p.Client().Get(tc.server)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: the request succeeded", tc.profile)
			continue
		}
		t.Logf("%s: %v", tc.profile, err)
		if !strings.Contains(err.Error(), `connection profile "`+tc.profile+`"`) || !strings.Contains(err.Error(), tc.setting) {
			t.Errorf("%s: %q does not name the profile and %q", tc.profile, err, tc.setting)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error carries the token: %v", tc.profile, err)
		}
	}
}
