package connprofile_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

const secret = "s3cr3t-value-never-printed"

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func parse(t *testing.T, dir, yaml string) (*connprofile.Set, error) {
	t.Helper()
	return connprofile.Parse([]byte(yaml), dir, connprofile.Options{})
}

func TestParseRefusesBadProfiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "token", secret)
	for name, tc := range map[string]struct{ yaml, want string }{
		"no server":       {`profiles: [{name: a, namespaces: ["*"]}]`, "exactly one of url and url_pattern"},
		"both servers":    {`profiles: [{name: a, url: "http://p", url_pattern: "http://*", namespaces: ["*"]}]`, "exactly one"},
		"no namespaces":   {`profiles: [{name: a, url: "http://p"}]`, "namespaces"},
		"bad namespace":   {`profiles: [{name: a, url: "http://p", namespaces: ["A_B"]}]`, "not a namespace"},
		"bad name":        {`profiles: [{name: "A B", url: "http://p", namespaces: ["*"]}]`, "name"},
		"duplicate":       {`profiles: [{name: a, url: "http://p", namespaces: ["*"]}, {name: a, url: "http://q", namespaces: ["*"]}]`, "declared twice"},
		"bad url":         {`profiles: [{name: a, url: "p:9090", namespaces: ["*"]}]`, "url"},
		"bad pattern":     {`profiles: [{name: a, url_pattern: "http://[", namespaces: ["*"]}]`, "url_pattern"},
		"misspelt key":    {`profiles: [{name: a, url: "http://p", namespaces: ["*"], passwd_file: x}]`, "passwd_file"},
		"missing file":    {`profiles: [{name: a, url: "http://p", namespaces: ["*"], bearer_token_file: nothere}]`, "nothere"},
		"empty file":      {`profiles: [{name: a, url: "http://p", namespaces: ["*"], basic_auth: {username: u, password_file: empty}}]`, "empty"},
		"ca not PEM":      {`profiles: [{name: a, url: "https://p", namespaces: ["*"], tls_config: {ca_file: token}}]`, "no PEM certificate"},
		"ref form":        {`profiles: [{name: a, url: "http://p", namespaces: ["*"], basic_auth: {username: u, password_ref: x}}]`, "_ref forms are not supported"},
		"tenant header":   {`profiles: [{name: a, url: "http://p", namespaces: ["*"], tenant: t, tenant_header: "Authorization"}]`, "reserved"},
		"header no value": {`profiles: [{name: a, url: "http://p", namespaces: ["*"], tenant_header: "X-Org"}]`, "without a tenant"},
		// A YAML error must not quote a value that may be a secret.
		"typed secret": {`profiles: [{name: a, url: "http://p", namespaces: ["*"], basic_auth: {username: u, password: [` + secret + `]}}]`, "yaml"},
	} {
		if name == "empty file" {
			write(t, dir, "empty", "\n")
		}
		_, err := parse(t, dir, tc.yaml)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error quotes the secret: %v", name, err)
		}
	}
	if _, err := connprofile.Load(filepath.Join(dir, "absent.yaml"), connprofile.Options{}); err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	set, err := parse(t, dir, `
profiles:
  - name: team-a
    url: HTTPS://Prom.Monitoring.svc:9090/
    namespaces: [team-a]
    basic_auth: {username: barometer, password: `+secret+`}
  - name: shared
    url_pattern: "http://*.thanos.svc:9090"
    namespaces: ["*"]
  - name: team-b-thanos
    url_pattern: "http://query.thanos.svc:9090"
    namespaces: [team-b]
`)
	if err != nil {
		t.Fatal(err)
	}
	const promA = "https://prom.monitoring.svc:9090"
	for name, tc := range map[string]struct {
		profile, server, ns string
		want, key           string // want: the profile's name, or "" for none
	}{
		"by name":                        {"team-a", "", "team-a", "team-a", ""},
		"by name and its server":         {"team-a", promA + "/", "team-a", "team-a", ""},
		"by address":                     {"", promA, "team-a", "team-a", ""},
		"by pattern":                     {"", "http://query.thanos.svc:9090", "team-b", "shared", ""},
		"first that admits":              {"team-b-thanos", "http://query.thanos.svc:9090", "team-b", "team-b-thanos", ""},
		"no profile for the address":     {"", "http://open.svc:9090", "team-a", "", ""},
		"unknown name":                   {"team-z", "", "team-a", "", connprofile.KeyProfile},
		"namespace refused":              {"team-a", "", "team-b", "", connprofile.KeyProfile},
		"namespace refused by address":   {"", promA, "team-b", "", connprofile.KeyServerAddress},
		"another server":                 {"team-a", "https://evil.svc:9090", "team-a", "", connprofile.KeyServerAddress},
		"pattern without a server":       {"shared", "", "team-a", "", connprofile.KeyServerAddress},
		"no namespace (default target)":  {"team-a", "", "", "", connprofile.KeyProfile},
		"any namespace admits the empty": {"shared", "http://x.thanos.svc:9090", "", "shared", ""},
	} {
		p, err := set.Resolve(tc.profile, tc.server, tc.ns)
		var perr *connprofile.Error
		switch {
		case tc.key != "":
			if !errors.As(err, &perr) || perr.Key != tc.key {
				t.Errorf("%s: err = %v, want a *connprofile.Error on key %s", name, err, tc.key)
				continue
			}
			msg := err.Error()
			other := tc.profile != "shared" && strings.Contains(msg, "shared")
			if other || strings.Contains(msg, secret) || strings.Contains(msg, "barometer") {
				t.Errorf("%s: the error says too much: %s", name, msg)
			}
			if strings.Contains(name, "namespace refused") && (!strings.Contains(msg, `"team-a"`) || !strings.Contains(msg, `"team-b"`)) {
				t.Errorf("%s: the error must name the profile and the namespace: %s", name, msg)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want == "" && p != nil:
			t.Errorf("%s: got %s, want no profile", name, p)
		case tc.want != "" && (p == nil || p.Name() != tc.want):
			t.Errorf("%s: got %v, want %s", name, p, tc.want)
		}
	}
	if p, _ := set.Resolve("team-a", "", "team-a"); p.URL() != promA {
		t.Errorf("URL = %q, want the normalised %q", p.URL(), promA)
	}
	if s := fmt.Sprintf("%v %+v", set, must(set.Resolve("team-a", "", "team-a"))); strings.Contains(s, secret) {
		t.Errorf("printing a profile shows its secret: %s", s)
	}
	var none *connprofile.Set
	if p, err := none.Resolve("", promA, "a"); p != nil || err != nil {
		t.Errorf("nil set by address: %v, %v", p, err)
	}
	if _, err := none.Resolve("team-a", "", "a"); err == nil {
		t.Error("nil set resolved a name")
	}
}

func TestResolveTargets(t *testing.T) {
	set, err := parse(t, t.TempDir(), `
profiles:
  - name: shop
    url_pattern: "https://*.shop.svc:9443/metrics"
    namespaces: [shop]
`)
	if err != nil {
		t.Fatal(err)
	}
	a, b := "https://a.shop.svc:9443/metrics", "https://b.shop.svc:9443/metrics"
	if p, err := set.ResolveTargets("", []string{a, b}, "shop"); err != nil || p == nil || p.Name() != "shop" {
		t.Errorf("two matching targets: %v, %v", p, err)
	}
	if p, err := set.ResolveTargets("", []string{"http://other.svc/metrics"}, "shop"); err != nil || p != nil {
		t.Errorf("no profile for the targets: %v, %v", p, err)
	}
	var perr *connprofile.Error
	if _, err := set.ResolveTargets("", []string{a, "http://other.svc/metrics"}, "shop"); !errors.As(err, &perr) || perr.Key != connprofile.KeyTargets {
		t.Errorf("targets of a profile and of none: %v", err)
	}
	if _, err := set.ResolveTargets("shop", []string{a, "http://other.svc/metrics"}, "shop"); !errors.As(err, &perr) || perr.Key != connprofile.KeyTargets {
		t.Errorf("a named profile and a target it does not match: %v", err)
	}
	if _, err := set.ResolveTargets("", []string{a}, "web"); !errors.As(err, &perr) || perr.Key != connprofile.KeyTargets || perr.Namespace != "web" {
		t.Errorf("a namespace the profile does not admit: %v", err)
	}
}

// TestRedirectKeepsCredentials: a profile that follows redirects, to
// another host it may be used with, sends neither its token nor its
// header files there.
func TestRedirectKeepsCredentials(t *testing.T) {
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		leaked = append(leaked, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	}))
	defer other.Close()
	// Another host: the same loopback server by another name.
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	}))
	defer srv.Close()
	dir := t.TempDir()
	write(t, dir, "token", secret)
	write(t, dir, "key", secret+"-key")
	set, err := parse(t, dir, `
profiles:
  - name: p
    url_pattern: "http://*"
    namespaces: ["*"]
    follow_redirects: true
    bearer_token_file: token
    http_headers: {X-Api-Key: {files: [key]}}
`)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := must(set.Resolve("p", srv.URL, "ns")).Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(leaked) != 2 || leaked[0] != "" || leaked[1] != "" {
		t.Errorf("the redirected request carried %q, want no credentials", leaked)
	}
}

func must(p *connprofile.Profile, err error) *connprofile.Profile {
	if err != nil {
		panic(err)
	}
	return p
}

// TestRotationAndLastGood reads a token and a header file through a real
// server: a rotated file is sent from the next request on; a file gone
// bad is logged once and counted once, and the last good value is sent.
func TestRotationAndLastGood(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Scope-OrgID")+"|"+r.Header.Get("X-Extra"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	tlstest.WriteSecret(t, secrets, map[string][]byte{"token": []byte("one\n"), "extra": []byte("e1")})
	var logs bytes.Buffer
	set, err := connprofile.Parse([]byte(`
profiles:
  - name: p
    url: `+srv.URL+`
    namespaces: ["*"]
    tenant: acme
    bearer_token_file: secrets/token
    http_headers:
      X-Extra: {files: [secrets/extra]}
`), dir, connprofile.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p := must(set.Resolve("p", "", "ns"))
	get := func() {
		t.Helper()
		resp, err := p.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get()
	tlstest.WriteSecret(t, secrets, map[string][]byte{"token": []byte("two"), "extra": []byte("e2")})
	get()
	tlstest.WriteSecret(t, secrets, map[string][]byte{"token": []byte("  "), "extra": []byte("e3")}) // a bad token
	get()
	get()
	want := []string{"Bearer one|acme|e1", "Bearer two|acme|e2", "Bearer two|acme|e3", "Bearer two|acme|e3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	if n := testutil.ToFloat64(set); n != 1 {
		t.Errorf("reload errors counted = %v, want 1 (one bad file, however often asked for)", n)
	}
	if c := strings.Count(logs.String(), "level=WARN"); c != 1 {
		t.Errorf("warnings logged = %d, want 1 (once per failure, not per request):\n%s", c, logs.String())
	}
	if strings.Contains(logs.String(), "two") {
		t.Errorf("the log quotes a token:\n%s", logs.String())
	}
	if err := testutil.CollectAndCompare(set, strings.NewReader(`
# HELP barometer_connection_profile_reload_errors_total Reads of a connection profile's credential or certificate file that failed (missing, unreadable, too large, empty, not a header value or not PEM), once per changed file; the last good content stayed in use.
# TYPE barometer_connection_profile_reload_errors_total counter
barometer_connection_profile_reload_errors_total{field="authorization.credentials_file",profile="p"} 1
`)); err != nil {
		t.Error(err)
	}
}

// TestCertificateRotation: a rotated client certificate is presented on
// the next request; a certificate file gone bad keeps the last good pair.
func TestCertificateRotation(t *testing.T) {
	ca := tlstest.NewCA(t)
	var (
		mu  sync.Mutex
		cns []string
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		cns = append(cns, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{ca.IssueKeyPair(t, "server", "127.0.0.1")},
		ClientCAs:    ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	pair := func(cn string) map[string][]byte {
		c, k := ca.Issue(t, cn)
		return map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": c, "tls.key": k}
	}
	tlstest.WriteSecret(t, secrets, pair("first"))
	set, err := parse(t, dir, `
profiles:
  - name: p
    url: `+srv.URL+`
    namespaces: ["*"]
    tls_config: {ca_file: secrets/ca.crt, cert_file: secrets/tls.crt, key_file: secrets/tls.key}
`)
	if err != nil {
		t.Fatal(err)
	}
	client := must(set.Resolve("p", "", "ns")).Client()
	get := func() {
		t.Helper()
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get()
	tlstest.WriteSecret(t, secrets, pair("second"))
	get()
	bad := pair("third")
	bad["tls.crt"] = []byte("not a certificate")
	tlstest.WriteSecret(t, secrets, bad)
	get()
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(cns) != "[first second second]" {
		t.Errorf("client certificates presented: %v, want [first second second]", cns)
	}
	if n := testutil.ToFloat64(set); n < 1 {
		t.Errorf("reload errors = %v, want the bad certificate counted", n)
	}
}

// TestUnknownFieldNamesTheProfile: a misspelt key names the file's line,
// as yaml does, and the profile it is in.
func TestUnknownFieldNamesTheProfile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "password", secret)
	path := write(t, dir, "profiles.yaml", `
profiles:
  - name: team-a
    url: http://a
    namespaces: [team-a]
  - name: team-b
    url: http://b
    namespaces: [team-b]
    basic_auth:
      username: u
      passwd_file: password
`)
	_, err := connprofile.Load(path, connprofile.Options{})
	t.Log(err)
	for _, want := range []string{path, `profile "team-b"`, "line 11", "passwd_file"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "team-a") {
		t.Errorf("err names a profile that is fine: %v", err)
	}
	// At the top level, there is no profile to name.
	path = write(t, dir, "top.yaml", "profile:\n  - name: team-a\n")
	if _, err = connprofile.Load(path, connprofile.Options{}); err == nil || !strings.Contains(err.Error(), "line 1") || strings.Contains(err.Error(), "team-a") {
		t.Errorf("a misspelt top-level key: %v", err)
	}
	// A profile's own key misspelt, in the flow style.
	_, err = parse(t, dir, `profiles: [{name: team-c, url: "http://c", namespaces: ["*"], tenent: x}]`)
	if err == nil || !strings.Contains(err.Error(), `profile "team-c"`) || !strings.Contains(err.Error(), "tenent") {
		t.Errorf("a misspelt profile key: %v", err)
	}
}
