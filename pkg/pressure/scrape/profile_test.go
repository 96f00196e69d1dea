package scrape

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

// TestThroughAProfile scrapes a replica whose /metrics needs a bearer
// token and a client certificate, over TLS from a private CA, through a
// connection profile; without the profile, and with a stale token, it is
// refused.
func TestThroughAProfile(t *testing.T) {
	const token, rotated = "scrape-token-5c1e", "scrape-token-9a7d"
	ca := tlstest.NewCA(t)
	w := demo.New(demo.Config{})
	w.SetLoad(40)
	var want atomic.Value // the token the replica accepts
	want.Store(token)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+want.Load().(string) {
			http.Error(rw, "bad token", http.StatusUnauthorized)
			return
		}
		w.Handler().ServeHTTP(rw, r)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{ca.IssueKeyPair(t, "replica", "127.0.0.1")},
		ClientCAs:    ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake without a client certificate
	srv.StartTLS()
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := ca.Issue(t, "barometer")
	files := map[string][]byte{"token": []byte(token), "ca.crt": ca.CertPEM, "tls.crt": certPEM, "tls.key": keyPEM}
	tlstest.WriteSecret(t, secrets, files)
	set, err := connprofile.Parse([]byte(`
profiles:
  - name: replicas
    url_pattern: "https://127.0.0.1:*"
    namespaces: [shop]
    authorization: {credentials_file: secrets/token}
    tls_config: {ca_file: secrets/ca.crt, cert_file: secrets/tls.crt, key_file: secrets/tls.key}
  - name: replicas-no-ca
    url_pattern: "https://127.0.0.1:*"
    namespaces: [shop]
    authorization: {credentials_file: secrets/token}
`), dir, connprofile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := set.Resolve("", srv.URL, "shop")
	if err != nil || p == nil {
		t.Fatalf("resolve by address: %v, %v", p, err)
	}
	observe := func(p *connprofile.Profile) (float64, string) {
		t.Helper()
		src := newSource(t, Options{Targets: targets(t, srv.URL+"/metrics"), Profile: p})
		obs, err := src.Observe(context.Background())
		if err != nil {
			return 0, err.Error()
		}
		return obs.Replicas[0].WorkingSet, ""
	}
	if ws, err := observe(p); err != "" || ws != w.State().WorkingSet {
		t.Fatalf("through the profile: working set %v (want %v), err %s", ws, w.State().WorkingSet, err)
	}
	if _, err := observe(nil); err == "" {
		t.Error("read without the profile")
	}
	// A failed handshake names the profile and what to set.
	noCA, err := set.Resolve("replicas-no-ca", srv.URL, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := observe(noCA); !strings.Contains(err, `connection profile "replicas-no-ca"`) || !strings.Contains(err, "tls_config.ca_file") || strings.Contains(err, token) {
		t.Errorf("a profile without the CA: err %q, want it to name the profile and tls_config.ca_file", err)
	}
	want.Store(rotated)
	if _, err := observe(p); !strings.Contains(err, "401") || strings.Contains(err, token) {
		t.Errorf("stale token: err %q, want a 401 that does not quote the token", err)
	}
	files["token"] = []byte(rotated)
	tlstest.WriteSecret(t, secrets, files)
	if _, err := observe(p); err != "" {
		t.Errorf("rotated token file: %s", err)
	}
}

func TestProfileTimeoutIsTheCeiling(t *testing.T) {
	set, err := connprofile.Parse([]byte(`profiles: [{name: p, url_pattern: "http://*", namespaces: ["*"], timeout: 1s}]`), "", connprofile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := set.Resolve("p", "http://replica.svc", "ns")
	if err != nil {
		t.Fatal(err)
	}
	for trigger, want := range map[time.Duration]time.Duration{0: time.Second, 500 * time.Millisecond: 500 * time.Millisecond, 5 * time.Second: time.Second} {
		src := newSource(t, Options{Targets: targets(t, "http://replica.svc/metrics"), Profile: p, Timeout: trigger})
		if src.opts.Timeout != want {
			t.Errorf("scrapeTimeout %v with a 1s profile: %v, want %v", trigger, src.opts.Timeout, want)
		}
	}
}

// TestProfileRedirectNotFollowed: a replica scraped through a profile
// that says follow_redirects: true still does not follow its redirect to
// another host, so the profile's tenant does not travel there.
func TestProfileRedirectNotFollowed(t *testing.T) {
	var reached atomic.Int32
	other := startOn(t, "127.0.0.1:0", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	elsewhere := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	replica := startOn(t, "127.0.0.1:0", http.RedirectHandler(elsewhere+"/metrics", http.StatusFound))
	set, err := connprofile.Parse([]byte(`profiles: [{name: p, url_pattern: "http://*/metrics", namespaces: ["*"], tenant: shop, follow_redirects: true}]`), "", connprofile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := set.Resolve("p", replica.URL+"/metrics", "shop")
	if err != nil {
		t.Fatal(err)
	}
	_, err = newSource(t, Options{Targets: targets(t, replica.URL+"/metrics"), Profile: p}).Observe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "302") {
		t.Errorf("err = %v, want the redirect's 302", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
}
