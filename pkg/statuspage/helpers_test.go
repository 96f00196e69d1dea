package statuspage_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/statuspage"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// What the connection profile holds and no page may ever show: a header
// value, the bearer token file's content and the tenant.
const (
	headerSecret = "hdr-s3cret-value"
	tokenSecret  = "tok-s3cret-from-file"
	tenantSecret = "tenant-s3cret"
)

// The hostile ScaledObject names and metadata value: KEDA forwards any
// name, and a scrape metric name may be any UTF-8.
const (
	hostileScript = `<script>alert(1)</script>`
	hostileImg    = `"><img src=x onerror=alert(1)>`
	hostileMeta   = `"><img src=x onerror=document.title='pwned'>`
)

// replicas are the workload's replicas on one loopback HTTP server: each
// path is a replica whose nth scrape answers the nth entry of its script
// (memory in use as a fraction of its limit; below 0 it fails), the last
// entry once past the end. A scrape without the connection profile's
// header and token is refused with 401; /denied refuses every scrape.
type replicas struct {
	srv     *httptest.Server
	mu      sync.Mutex
	scripts map[string][]float64
	scrapes map[string]int
}

func newReplicas(t testing.TB, scripts map[string][]float64) *replicas {
	r := &replicas{scripts: scripts, scrapes: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("X-Api-Key") != headerSecret || req.Header.Get("Authorization") != "Bearer "+tokenSecret || req.URL.Path == "/denied" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.mu.Lock()
		script, n := r.scripts[req.URL.Path], r.scrapes[req.URL.Path]
		r.scrapes[req.URL.Path]++
		r.mu.Unlock()
		if len(script) == 0 {
			http.NotFound(w, req)
			return
		}
		f := script[min(n, len(script)-1)]
		if f < 0 {
			http.Error(w, "replica down", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "process_resident_memory_bytes %d\nbarometer_memory_limit_bytes 1000\n", int(f*1000))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *replicas) url(paths ...string) string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = r.srv.URL + p
	}
	return strings.Join(out, ",")
}

// repeat is n copies of f.
func repeat(n int, f float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func concat(parts ...[]float64) []float64 {
	var out []float64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// scaler is the scaler's HTTP surface over a registry with real targets:
// three scrape replicas of a checkout service reached through a
// connection profile, a host target, a ScaledObject whose replica refuses
// the profile, and two ScaledObjects with hostile names and metadata.
type scaler struct {
	url      string
	reg      *registry.Registry
	clock    *samplingtest.FakeClock
	targets  []*registry.Target
	profiles string // the profile file's content
}

// The ScaledObjects the scaler serves.
var (
	checkout  = registry.Ref{Namespace: "shop", Name: "checkout"}
	reporting = registry.Ref{Namespace: "batch", Name: "reporting"}
	denied    = registry.Ref{Namespace: "shop", Name: "denied"}
	evilOne   = registry.Ref{Namespace: "evil", Name: hostileScript}
	evilTwo   = registry.Ref{Namespace: "evil", Name: hostileImg}
)

// checkoutScript is each checkout replica's memory over the samples: calm,
// a rise to saturation (the surge), a fall the gate holds, every replica
// down (failed samples that go stale), and calm again; the third replica
// also misses a few samples.
func checkoutScript(replica int) []float64 {
	s := concat(repeat(10, 0.35), []float64{0.55, 0.7, 0.85, 0.95}, repeat(4, 1), repeat(12, 0.25), repeat(5, -1), repeat(13, 0.3))
	if replica == 2 {
		copy(s[22:26], repeat(4, -1))
	}
	return s
}

// samples is how many samples newScaler takes of every target.
const samples = 48

// newScaler starts the surface and takes samples of every target, one
// tick of the fake clock each. The clock stands an hour behind the wall
// clock, so the scrapes' measurement times (the wall clock's) read as
// fresh data rather than as data hours old.
func newScaler(t testing.TB, refresh time.Duration) *scaler {
	t.Helper()
	rs := newReplicas(t, map[string][]float64{
		"/checkout-0": checkoutScript(0), "/checkout-1": checkoutScript(1), "/checkout-2": checkoutScript(2),
		"/evil-0": repeat(1, 0.5),
	})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(tokenSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	profiles := fmt.Sprintf(`profiles:
  - name: shop-replicas
    url_pattern: %s/*
    namespaces: ["*"]
    tenant: %s
    bearer_token_file: token
    http_headers:
      X-Api-Key:
        secrets: [%s]
`, rs.srv.URL, tenantSecret, headerSecret)
	file := filepath.Join(dir, "profiles.yaml")
	if err := os.WriteFile(file, []byte(profiles), 0o600); err != nil {
		t.Fatal(err)
	}
	allowed, err := allow.Parse("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	set, err := connprofile.Load(file, connprofile.Options{Control: allowed.Control})
	if err != nil {
		t.Fatal(err)
	}
	clock := samplingtest.NewFakeClock(time.Now().Add(-time.Hour).Truncate(time.Second))
	const interval = 5 * time.Second
	reg := registrytest.NewRegistry(t, registry.Config{
		Schema:          trigger.NewSchema(host.Kind(), scrape.Kind(allowed, set, scrape.Kube{})),
		DefaultInterval: interval, History: sampling.DefaultHistory, Clock: clock,
	})
	s := &scaler{reg: reg, clock: clock, profiles: profiles}
	def, err := reg.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := reg.SetDefault(def)
	if err != nil {
		t.Fatal(err)
	}
	s.targets = append(s.targets, tg)
	evil := map[string]string{"source": "scrape", "targets": rs.url("/evil-0"), "connectionProfile": "shop-replicas", "activationMetric": hostileMeta}
	for _, so := range []struct {
		ref registry.Ref
		md  map[string]string
	}{
		{checkout, map[string]string{"source": "scrape", "targets": rs.url("/checkout-0", "/checkout-1", "/checkout-2"),
			"connectionProfile": "shop-replicas", "profile": "responsive", "minReplicas": "1"}},
		{reporting, map[string]string{"source": "host", "profile": "original", "targetPressure": "0.5", "ewmaHalfLife": "2m"}},
		{denied, map[string]string{"source": "scrape", "targets": rs.url("/denied"), "connectionProfile": "shop-replicas"}},
		{evilOne, evil},
		{evilTwo, evil},
	} {
		tg, _, err := reg.Resolve(so.ref, so.md)
		if err != nil {
			t.Fatalf("%s: %v", so.ref, err)
		}
		s.targets = append(s.targets, tg)
	}
	for _, tg := range s.targets {
		registrytest.WaitSamples(t, tg, 1)
	}
	for n := uint64(2); n <= samples; n++ {
		clock.Tick(t, interval)
		for _, tg := range s.targets {
			registrytest.WaitSamples(t, tg, n)
		}
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Registry: reg,
		Status: statuspage.New(statuspage.Config{Registry: reg, Refresh: refresh})}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// get fetches path from the surface and returns the status and body.
func (s *scaler) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
