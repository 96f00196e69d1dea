package promsource_test

import (
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/internal/promtest"
	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource"
	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

// The credentials of the secured fixture. Each is long and unusual, so a
// test can tell that no error or log line carries one.
const (
	promUser      = "barometer"
	password1     = "pw-one-4f1c9a7e"
	password2     = "pw-two-8b2d6e30"
	wrongPassword = "pw-wrong-0c5e1d77"
	proxyUser     = "proxy"
	proxyPassword = "pw-proxy-a93b7c21"
	token1        = "tok-one-6a0f3b9e"
	token2        = "tok-two-d17c4e58"
	wrongToken    = "tok-wrong-2e8a9f04"
)

var allSecrets = []string{password1, password2, wrongPassword, proxyPassword, token1, token2, wrongToken}

// secured is one Prometheus that requires TLS (a CA the test made) and
// basic auth, scraping one replica whose working set is 5, and the
// Secret-like directory the profiles read their files from.
type secured struct {
	prom    *promtest.Server
	ca      *tlstest.CA
	secrets string // kubelet-style secret volume (tlstest.WriteSecret)
	files   map[string][]byte
}

func startSecured(t *testing.T) *secured {
	replica := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE barometer_activations gauge\nbarometer_activations 5")
	}))
	t.Cleanup(replica.Close)
	s := &secured{ca: tlstest.NewCA(t), secrets: filepath.Join(t.TempDir(), "secrets")}
	if err := os.Mkdir(s.secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	s.prom = promtest.Start(t,
		[]promtest.Target{{URL: replica.URL + "/metrics", Labels: map[string]string{"job": "auth", "pod": "auth-0"}}},
		promtest.Options{Web: &promtest.Web{CA: s.ca, Users: map[string]string{promUser: password1, proxyUser: proxyPassword}}})
	s.prom.WaitSeries(t, `barometer_activations{job="auth"}`, 1, 30*time.Second)
	s.files = map[string][]byte{"ca.crt": s.ca.CertPEM, "password": []byte(password1), "wrong": []byte(wrongPassword),
		"token": []byte(token1), "wrong-token": []byte(wrongToken), "stranger.crt": tlstest.NewCA(t).CertPEM}
	s.rotate(t, nil)
	return s
}

// rotate rewrites the secret volume as the kubelet does, with some files
// changed.
func (s *secured) rotate(t *testing.T, changed map[string]string) {
	for k, v := range changed {
		s.files[k] = []byte(v)
	}
	tlstest.WriteSecret(t, s.secrets, s.files)
}

func (s *secured) profiles(t *testing.T, yaml string) *connprofile.Set {
	t.Helper()
	path := filepath.Join(filepath.Dir(s.secrets), "profiles.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	// The default allow-list admits no loopback address: the profile's
	// dialer is vetted by a list that admits only this test's.
	list, err := allow.Parse("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	set, err := connprofile.Load(path, connprofile.Options{Control: list.Control})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// read resolves a profile and reads the working set through it.
func read(t *testing.T, set *connprofile.Set, profile, namespace string) (float64, error) {
	t.Helper()
	p, err := set.Resolve(profile, "", namespace)
	if err != nil {
		t.Fatalf("resolve %s: %v", profile, err)
	}
	src, err := promsource.New(promsource.Options{
		ServerAddress: p.URL(), Profile: p,
		Queries: promsource.Queries{Activation: `barometer_activations{job="auth"}`},
	})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := observe(t, src)
	if err != nil {
		return 0, err
	}
	return obs.Replicas[0].WorkingSet, nil
}

// wantClearError checks a failed read says what failed, and no secret.
func wantClearError(t *testing.T, what string, err error, mentions ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: read succeeded", what)
		return
	}
	t.Logf("%s: %v", what, err)
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%s: error %q does not mention %q", what, err, m)
		}
	}
	for _, s := range allSecrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q carries a secret", what, err)
		}
	}
}

func TestSecuredPrometheus(t *testing.T) {
	s := startSecured(t)

	t.Run("basic auth and TLS", func(t *testing.T) {
		set := s.profiles(t, `
profiles:
  - name: team-a
    url: `+s.prom.URL+`
    namespaces: [team-a]
    basic_auth: {username: `+promUser+`, password_file: secrets/password}
    tls_config: {ca_file: secrets/ca.crt}
  - name: wrong-password
    url: `+s.prom.URL+`
    namespaces: ["*"]
    basic_auth: {username: `+promUser+`, password_file: secrets/wrong}
    tls_config: {ca_file: secrets/ca.crt}
  - name: no-credentials
    url: `+s.prom.URL+`
    namespaces: ["*"]
    tls_config: {ca_file: secrets/ca.crt}
  - name: no-ca
    url: `+s.prom.URL+`
    namespaces: ["*"]
    basic_auth: {username: `+promUser+`, password_file: secrets/password}
  - name: unknown-ca
    url: `+s.prom.URL+`
    namespaces: ["*"]
    basic_auth: {username: `+promUser+`, password_file: secrets/password}
    tls_config: {ca_file: secrets/stranger.crt}
`)
		if v, err := read(t, set, "team-a", "team-a"); err != nil || v != 5 {
			t.Fatalf("right credentials: working set %v, err %v", v, err)
		}
		_, err := read(t, set, "wrong-password", "x")
		wantClearError(t, "wrong password", err, "401")
		_, err = read(t, set, "no-credentials", "x")
		wantClearError(t, "no credentials", err, "401")
		_, err = read(t, set, "no-ca", "x")
		wantClearError(t, "untrusted server, no CA file", err, "certificate", `connection profile "no-ca"`, "no tls_config.ca_file")
		_, err = read(t, set, "unknown-ca", "x")
		wantClearError(t, "untrusted server, another CA", err, "certificate", `connection profile "unknown-ca"`, "tls_config.ca_file")

		// The server moves to a new password: the old one is refused,
		// and once the Secret has the new one it is read, by the same
		// loaded Set, without a restart.
		s.prom.SetUsers(t, map[string]string{promUser: password2, proxyUser: proxyPassword})
		_, err = read(t, set, "team-a", "team-a")
		wantClearError(t, "password rotated on the server only", err, "401")
		s.rotate(t, map[string]string{"password": password2})
		if v, err := read(t, set, "team-a", "team-a"); err != nil || v != 5 {
			t.Errorf("rotated password file: working set %v, err %v", v, err)
		}
		// A rotation gone wrong (an empty password) is counted, and the
		// last good password stays in use.
		s.rotate(t, map[string]string{"password": ""})
		if v, err := read(t, set, "team-a", "team-a"); err != nil || v != 5 {
			t.Errorf("emptied password file: working set %v, err %v; want the last good password used", v, err)
		}
		if n := testutil.ToFloat64(set); n < 1 {
			t.Errorf("reload errors = %v, want the empty file counted", n)
		}
		s.rotate(t, map[string]string{"password": password2})

		_, err = set.Resolve("team-a", "", "team-b")
		var perr *connprofile.Error
		if !errors.As(err, &perr) || perr.Key != connprofile.KeyProfile || !strings.Contains(err.Error(), `"team-b"`) {
			t.Errorf("a namespace the profile does not allow: %v", err)
		}
	})

	t.Run("the default timestamp query dates the data", func(t *testing.T) {
		q := promsource.DefaultQueries(exposition.DefaultNames(), `job="auth"`, 0)
		at := time.Now()
		v, _, _, err := s.prom.API.Query(t.Context(), q.Timestamp, at)
		if err != nil {
			t.Fatal(err)
		}
		vec, _ := v.(model.Vector)
		got := promsource.DataTime(vec, at)
		// Scraped every second: the newest sample is a scrape ago, not
		// the evaluation instant the query's own timestamps carry.
		if got.IsZero() || got.After(at) || at.Sub(got) > time.Minute {
			t.Errorf("DataTime = %v for a query at %v (%v)", got, at, vec)
		}
		if len(vec) == 1 && vec[0].Timestamp.Time().Equal(got) {
			t.Errorf("DataTime is the evaluation instant %v, not the sample's time", got)
		}
	})

	t.Run("bearer token and tenant through a proxy", func(t *testing.T) {
		proxy := newTenantProxy(t, s, token1, "team-a")
		set := s.profiles(t, `
profiles:
  - name: tenant-a
    url: `+proxy.URL+`
    namespaces: [team-a]
    tenant: team-a
    authorization: {credentials_file: secrets/token}
  - name: wrong-token
    url_pattern: `+proxy.URL+`
    namespaces: ["*"]
    tenant: team-a
    authorization: {credentials_file: secrets/wrong-token}
  - name: tenant-b
    url: `+proxy.URL+`
    namespaces: ["*"]
    tenant: team-b
    bearer_token_file: secrets/token
`)
		if v, err := read(t, set, "tenant-a", "team-a"); err != nil || v != 5 {
			t.Fatalf("right token and tenant: working set %v, err %v", v, err)
		}
		p, err := set.Resolve("wrong-token", proxy.URL, "x")
		if err != nil {
			t.Fatal(err)
		}
		src, err := promsource.New(promsource.Options{ServerAddress: proxy.URL, Profile: p, Queries: promsource.Queries{Activation: "barometer_activations"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = observe(t, src)
		wantClearError(t, "wrong token", err, "401")
		_, err = read(t, set, "tenant-b", "x")
		wantClearError(t, "wrong tenant", err, "403")

		// A trigger cannot choose its tenant with a custom header.
		p, _ = set.Resolve("tenant-a", "", "team-a")
		_, err = promsource.New(promsource.Options{ServerAddress: p.URL(), Profile: p, Queries: promsource.Queries{Activation: "a"},
			CustomHeaders: map[string]string{"x-scope-orgid": "team-b"}})
		if err == nil {
			t.Error("a custom header overriding the profile's tenant was accepted")
		}

		proxy.setToken(token2)
		_, err = read(t, set, "tenant-a", "team-a")
		wantClearError(t, "token rotated at the proxy only", err, "401")
		s.rotate(t, map[string]string{"token": token2})
		if v, err := read(t, set, "tenant-a", "team-a"); err != nil || v != 5 {
			t.Errorf("rotated token file: working set %v, err %v", v, err)
		}
	})
}

// tenantProxy stands for an OAuth proxy or a multi-tenant frontend in
// front of the secured Prometheus: it requires a bearer token and the
// tenant header, and reaches Prometheus with credentials of its own.
type tenantProxy struct {
	*httptest.Server
	mu    sync.Mutex
	token string
}

func newTenantProxy(t *testing.T, s *secured, token, tenant string) *tenantProxy {
	target, err := url.Parse(s.prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Header.Del("X-Scope-OrgID")
			r.Out.SetBasicAuth(proxyUser, proxyPassword)
		},
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.Pool(), MinVersion: tls.VersionTLS12}},
	}
	p := &tenantProxy{token: token}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		want := "Bearer " + p.token
		p.mu.Unlock()
		switch {
		case subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1:
			http.Error(w, "invalid bearer token", http.StatusUnauthorized)
		case r.Header.Get("X-Scope-OrgID") != tenant:
			http.Error(w, "tenant not allowed", http.StatusForbidden)
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *tenantProxy) setToken(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.token = token
}
