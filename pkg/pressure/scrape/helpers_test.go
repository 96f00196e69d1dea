package scrape

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/target"
)

// clock is a hand-moved clock shared by a source and demo replicas.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// replica is a demo-workload replica on a loopback listener.
type replica struct {
	*demo.Workload
	srv *httptest.Server
}

func (r replica) url() string { return r.srv.URL + "/metrics" }

func startDemo(t testing.TB, rps float64, cfg demo.Config) replica {
	t.Helper()
	w := demo.New(cfg)
	w.SetLoad(rps)
	srv := httptest.NewServer(w.Handler())
	t.Cleanup(srv.Close)
	return replica{w, srv}
}

// startOn serves h on a given loopback address (for DNS expansion tests,
// where every record shares the port).
func startOn(t testing.TB, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// hanging answers nothing until the client goes away.
func hanging(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// garbage answers 200 with something that is not an exposition.
func garbage(t testing.TB, contentType, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// huge streams size bytes of well-formed series, without Content-Length,
// until done or the client hangs up.
func huge(t testing.TB, size int) *httptest.Server {
	t.Helper()
	line := []byte("filler_series{replica=\"huge\",pad=\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"} 1\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for written := 0; written < size; written += len(line) {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// static serves a fixed text exposition.
func static(t testing.TB, body string) *httptest.Server {
	return garbage(t, "text/plain; version=0.0.4; charset=utf-8", body)
}

func targets(t testing.TB, urls ...string) []target.Target {
	t.Helper()
	out := make([]target.Target, len(urls))
	for i, u := range urls {
		var err error
		if out[i], err = target.Parse(u); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func newSource(t testing.TB, o Options) *Source {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fakeResolver answers from a table the test changes between samples; a
// name in fail fails with its error, a name in neither does not exist.
type fakeResolver struct {
	mu    sync.Mutex
	table map[string][]netip.Addr
	fail  map[string]error
	calls int
}

func (r *fakeResolver) setErr(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail == nil {
		r.fail = map[string]error{}
	}
	r.fail[name] = err
}

func (r *fakeResolver) set(name string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.table == nil {
		r.table = map[string][]netip.Addr{}
	}
	r.table[name] = nil
	for _, a := range addrs {
		r.table[name] = append(r.table[name], netip.MustParseAddr(a))
	}
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if network != "ip" {
		return nil, fmt.Errorf("network %q", network)
	}
	if err := r.fail[host]; err != nil {
		return nil, err
	}
	addrs, ok := r.table[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return append([]netip.Addr(nil), addrs...), nil
}

// missingErr checks that name is among the missing replicas and that its
// error mentions want.
func missingErr(t *testing.T, missing map[string]string, name, want string) {
	t.Helper()
	got, ok := missing[name]
	if !ok {
		t.Errorf("%s not reported missing (missing: %v)", name, missing)
		return
	}
	if !strings.Contains(got, want) {
		t.Errorf("%s missing with %q, want it to mention %q", name, got, want)
	}
}

// settleGoroutines waits for the goroutine count to fall back to at most
// base, failing with a dump when it does not.
func settleGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, want <= %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
