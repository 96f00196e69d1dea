package connprofile_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

// huge makes path a sparse file of 100 MB: what a mistaken copy into a
// Secret's volume (or a log redirected onto a token file) looks like.
func huge(t testing.TB, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
}

// TestOversizedFileRefusedAtStart: a credential or PEM file past its cap
// stops the load, naming the profile, the file and the cap, without
// reading it.
func TestOversizedFileRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	huge(t, filepath.Join(dir, "token"))
	write(t, dir, "password", strings.Repeat("p", 16<<10+1))
	for name, tc := range map[string]struct{ yaml, profile, file, cap string }{
		"token": {`profiles: [{name: big-token, url: "http://p", namespaces: ["*"], bearer_token_file: token}]`,
			"big-token", filepath.Join(dir, "token"), "16 KiB"},
		"password one byte over": {`profiles: [{name: big-password, url: "http://p", namespaces: ["*"], basic_auth: {username: u, password_file: password}}]`,
			"big-password", filepath.Join(dir, "password"), "16 KiB"},
		"CA bundle": {`profiles: [{name: big-ca, url: "https://p", namespaces: ["*"], tls_config: {ca_file: token}}]`,
			"big-ca", filepath.Join(dir, "token"), "1 MiB"},
	} {
		_, err := parse(t, dir, tc.yaml)
		if err == nil {
			t.Errorf("%s: a file past the cap was accepted", name)
			continue
		}
		for _, want := range []string{`"` + tc.profile + `"`, tc.file, tc.cap} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %s", name, err, want)
			}
		}
	}
	// The cap itself is allowed.
	write(t, dir, "password", strings.Repeat("p", 16<<10))
	if _, err := parse(t, dir, `profiles: [{name: a, url: "http://p", namespaces: ["*"], basic_auth: {username: u, password_file: password}}]`); err != nil {
		t.Errorf("a password of exactly 16 KiB: %v", err)
	}
}

// recorder is a real server that records each request's Authorization.
type recorder struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
}

func newRecorder(t testing.TB) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, req.Header.Get("Authorization"))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func get(t testing.TB, c *http.Client, url string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// TestFileGrownPastTheCap: a token file that grows to 100 MB at run time
// is not read: the last good token stays in use, the growth is counted
// once and logged once, the memory stays bounded, and another profile's
// requests are served all along. Before the cap, each request read the
// whole file (100 MB allocated per request).
func TestFileGrownPastTheCap(t *testing.T) {
	srv := newRecorder(t)
	dir := t.TempDir()
	write(t, dir, "big", "tok-big-7d3f")
	write(t, dir, "small", "tok-small-19ae")
	var logs bytes.Buffer
	set, err := connprofile.Parse([]byte(`
profiles:
  - {name: big, url: `+srv.URL+`, namespaces: [a], bearer_token_file: big}
  - {name: small, url_pattern: "`+srv.URL+`", namespaces: [b], bearer_token_file: small}
`), dir, connprofile.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	big, small := must(set.Resolve("big", "", "a")).Client(), must(set.Resolve("small", srv.URL, "b")).Client()
	get(t, big, srv.URL)
	huge(t, filepath.Join(dir, "big"))

	const requests = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range requests {
		get(t, big, srv.URL)
		get(t, small, srv.URL)
	}
	runtime.ReadMemStats(&after)

	got := srv.sent()
	for i, auth := range got {
		want := "Bearer tok-big-7d3f"
		if i > 0 && i%2 == 0 {
			want = "Bearer tok-small-19ae"
		}
		if auth != want {
			t.Fatalf("request %d sent %q, want %q (all: %q)", i, auth, want, got)
		}
	}
	if len(got) != 1+2*requests {
		t.Errorf("%d requests served, want %d", len(got), 1+2*requests)
	}
	// A read of the file would allocate 100 MB; 20 requests' own
	// allocations are some hundreds of KB (more under -race).
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d requests with a 100 MB token file allocated %d KB; heap in use %d MB", 2*requests, alloc>>10, after.HeapInuse>>20)
	if alloc > 32<<20 {
		t.Errorf("%d requests allocated %d MB: the oversized file is being read", 2*requests, alloc>>20)
	}
	if n := testutil.ToFloat64(set); n != 1 {
		t.Errorf("reload errors = %v, want 1 (the file grew once)", n)
	}
	if c := strings.Count(logs.String(), "level=WARN"); c != 1 || !strings.Contains(logs.String(), "16 KiB") {
		t.Errorf("want one warning naming the cap, got %d:\n%s", c, logs.String())
	}
	// Shrunk back to a token, it is read again.
	write(t, dir, "big", "tok-big-rotated")
	get(t, big, srv.URL)
	if got := srv.sent(); got[len(got)-1] != "Bearer tok-big-rotated" {
		t.Errorf("after the file was fixed: sent %q", got[len(got)-1])
	}
	if strings.Contains(logs.String(), "tok-") {
		t.Errorf("the log quotes a token:\n%s", logs.String())
	}
}

// TestTokenWithALineBreak: a token rotated to a value no header can carry
// (two lines) keeps the last good token in use, counted and logged once,
// as an unreadable file; at start it is refused.
func TestTokenWithALineBreak(t *testing.T) {
	srv := newRecorder(t)
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	tlstest.WriteSecret(t, secrets, map[string][]byte{"token": []byte("tok-good-5e21\n")})
	var logs bytes.Buffer
	yaml := `profiles: [{name: p, url: "` + srv.URL + `", namespaces: ["*"], authorization: {credentials_file: secrets/token}}]`
	set, err := connprofile.Parse([]byte(yaml), dir, connprofile.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c := must(set.Resolve("p", "", "ns")).Client()
	get(t, c, srv.URL)
	tlstest.WriteSecret(t, secrets, map[string][]byte{"token": []byte("tok-new-8c04\ntok-second-line\n")})
	get(t, c, srv.URL)
	get(t, c, srv.URL)
	tlstest.WriteSecret(t, secrets, map[string][]byte{"token": []byte("tok-fixed-33b9")})
	get(t, c, srv.URL)
	want := "[Bearer tok-good-5e21,Bearer tok-good-5e21,Bearer tok-good-5e21,Bearer tok-fixed-33b9]"
	if got := fmtSlice(srv.sent()); got != want {
		t.Errorf("sent %s, want %s", got, want)
	}
	if n := testutil.ToFloat64(set); n != 1 {
		t.Errorf("reload errors = %v, want 1", n)
	}
	if c := strings.Count(logs.String(), "level=WARN"); c != 1 || !strings.Contains(logs.String(), "line break") {
		t.Errorf("want one warning saying why, got %d:\n%s", c, logs.String())
	}
	if strings.Contains(logs.String(), "tok-") {
		t.Errorf("the log quotes a token:\n%s", logs.String())
	}

	tlstest.WriteSecret(t, secrets, map[string][]byte{"token": []byte("tok-a-9f1e\r\ntok-b-0d2c")})
	_, err = connprofile.Parse([]byte(yaml), dir, connprofile.Options{})
	if err == nil || !strings.Contains(err.Error(), "line break") || strings.Contains(err.Error(), "tok-") {
		t.Errorf("a two-line token at start: %v", err)
	}
}

func fmtSlice(s []string) string { return "[" + strings.Join(s, ",") + "]" }

// TestUnchangedFileIsNotReread: a file whose size, modification time and
// identity are unchanged is not read again on a request. The test
// changes the content behind an unchanged stamp (which no rotation
// does) to see which content is sent.
func TestUnchangedFileIsNotReread(t *testing.T) {
	srv := newRecorder(t)
	dir := t.TempDir()
	path := write(t, dir, "token", "tok-one-aaaa")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	set, err := parse(t, dir, `profiles: [{name: p, url: "`+srv.URL+`", namespaces: ["*"], bearer_token_file: token}]`)
	if err != nil {
		t.Fatal(err)
	}
	c := must(set.Resolve("p", "", "ns")).Client()
	get(t, c, srv.URL)
	write(t, dir, "token", "tok-two-bbbb") // the same size, in place
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	get(t, c, srv.URL)
	now := time.Now()
	if err := os.Chtimes(path, now, now); err != nil {
		t.Fatal(err)
	}
	get(t, c, srv.URL)
	if got := fmtSlice(srv.sent()); got != "[Bearer tok-one-aaaa,Bearer tok-one-aaaa,Bearer tok-two-bbbb]" {
		t.Errorf("sent %s: want the file read again only when its stamp changed", got)
	}
}

// BenchmarkHugeCredentialFile is one request through a profile whose
// token file has grown to 100 MB at run time, and one through another
// profile: B/op is what both cost (a read of the file would be 100 MB).
// maxrss-MB is the process' peak resident size.
func BenchmarkHugeCredentialFile(b *testing.B) {
	srv := newRecorder(b)
	srv.Config.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	dir := b.TempDir()
	writeB(b, filepath.Join(dir, "big"), "tok-big")
	writeB(b, filepath.Join(dir, "small"), "tok-small")
	set, err := connprofile.Parse([]byte(`
profiles:
  - {name: big, url: `+srv.URL+`, namespaces: [a], bearer_token_file: big}
  - {name: small, url_pattern: "`+srv.URL+`", namespaces: [b], bearer_token_file: small}
`), dir, connprofile.Options{})
	if err != nil {
		b.Fatal(err)
	}
	big, small := must(set.Resolve("big", "", "a")).Client(), must(set.Resolve("small", srv.URL, "b")).Client()
	get(b, big, srv.URL)
	huge(b, filepath.Join(dir, "big"))
	b.ReportAllocs()
	for b.Loop() {
		get(b, big, srv.URL)
		get(b, small, srv.URL)
	}
	b.ReportMetric(float64(maxRSS())/(1<<20), "maxrss-MB")
}

// maxRSS is the process' peak resident size in bytes (Linux reports KiB).
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10
}

func writeB(b *testing.B, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
}
