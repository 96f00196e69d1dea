package scrape

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/target"
)

func mustAllow(t *testing.T, spec string) *allow.List {
	t.Helper()
	l, err := allow.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestDNSExpansion serves three demo replicas on 127.0.0.1, .2 and .3 at one
// port, as a headless Service's pods share theirs, and resolves the name
// through a resolver the test controls. Every sample resolves again; an
// address the allow-list refuses, and a lookup that fails, are named and
// left out; a name that does not exist adds nothing.
func TestDNSExpansion(t *testing.T) {
	first := startDemo(t, 20, demo.Config{})
	port := portOf(t, first.srv.URL)
	first.srv.Close()
	loads := map[string]float64{"127.0.0.1": 20, "127.0.0.2": 40, "127.0.0.3": 80}
	for ip, rps := range loads {
		w := demo.New(demo.Config{})
		w.SetLoad(rps)
		startOn(t, net.JoinHostPort(ip, port), w.Handler())
	}

	res := &fakeResolver{}
	res.set("web.ns.svc", "127.0.0.2", "127.0.0.1", "::ffff:127.0.0.1", "169.254.169.254")
	res.setErr("broken.ns.svc", &net.DNSError{Err: "server misbehaving", Name: "broken.ns.svc", IsTemporary: true})
	src := newSource(t, Options{
		Targets: targets(t, "dns+http://web.ns.svc:"+port+"/metrics", "dns+http://gone.ns.svc:"+port,
			"dns+http://broken.ns.svc:"+port),
		Allow:    mustAllow(t, "*.svc,127.0.0.0/8"),
		Resolver: res,
		Timeout:  time.Second,
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range obs.Replicas {
		names = append(names, r.Name)
	}
	want := []string{"http://127.0.0.1:" + port + "/metrics", "http://127.0.0.2:" + port + "/metrics"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("replicas %v, want %v (deduplicated, sorted)", names, want)
	}
	missing := map[string]string{}
	for _, m := range obs.Missing {
		missing[m.Name] = m.Err.Error()
	}
	missingErr(t, missing, "http://169.254.169.254:"+port+"/metrics", allow.EnvVar)
	missingErr(t, missing, "dns+http://broken.ns.svc:"+port+"/metrics", "server misbehaving")
	if len(missing) != 2 {
		t.Errorf("missing %v, want the refused address and the failed lookup only", missing)
	}
	var refused *allow.RefusedError
	for _, m := range obs.Missing {
		if strings.Contains(m.Name, "169.254") && !errors.As(m.Err, &refused) {
			t.Errorf("refusal is %T", m.Err)
		}
	}

	// The Service scales: the next sample sees the new record set.
	res.set("web.ns.svc", "127.0.0.3", "127.0.0.1", "127.0.0.2")
	obs, err = src.Observe(context.Background())
	if err != nil || len(obs.Replicas) != 3 {
		t.Fatalf("after scale-out: %v, %+v", err, obs.Replicas)
	}
	if obs.Replicas[2].WorkingSet != 0.8*80000 {
		t.Errorf("new replica working set %v", obs.Replicas[2].WorkingSet)
	}
	if res.calls != 6 {
		t.Errorf("resolver called %d times over 2 samples of 3 DNS targets", res.calls)
	}
}

// TestDNSScaledToZero: a headless Service without ready pods has no
// address (Kubernetes DNS answers NXDOMAIN, other servers no records).
// That is a sample of zero replicas with nothing missing, not a failure, so
// the signal can read the workload as scaled to zero. A static target that
// fails still fails the sample, and so does a lookup that fails.
func TestDNSScaledToZero(t *testing.T) {
	res := &fakeResolver{}
	res.set("empty.ns.svc") // no records
	res.setErr("broken.ns.svc", &net.DNSError{Err: "i/o timeout", Name: "broken.ns.svc", IsTimeout: true})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	observe := func(urls ...string) (pressure.Observation, error) {
		src := newSource(t, Options{
			Targets:  targets(t, urls...),
			Allow:    mustAllow(t, "*.svc,127.0.0.0/8"),
			Resolver: res,
			Timeout:  time.Second,
			Now:      func() time.Time { return at },
		})
		return src.Observe(context.Background())
	}
	obs, err := observe("dns+http://empty.ns.svc:9100/metrics", "dns+http://deleted-pods.ns.svc:9100/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Replicas) != 0 || len(obs.Missing) != 0 || obs.Queue != nil || obs.Trees != nil || !obs.ObservedAt.Equal(at) {
		t.Errorf("scaled to zero: %+v, want zero replicas, nothing missing", obs)
	}
	for name, urls := range map[string][]string{
		"failed lookup":                {"dns+http://broken.ns.svc:9100/metrics"},
		"failed static target":         {"http://127.0.0.1:1/metrics"},
		"failed static, empty Service": {"dns+http://empty.ns.svc:9100/metrics", "http://127.0.0.1:1/metrics"},
	} {
		if obs, err := observe(urls...); err == nil || !strings.Contains(err.Error(), "answered") {
			t.Errorf("%s: %+v, %v; want the sample to fail", name, obs, err)
		}
	}
}

// TestEndpointScrapedOnce: one pod reached through several targets (the
// Service named short and fully qualified, a static URL that is one of its
// addresses) is scraped once and counted once, under the first target's
// name.
func TestEndpointScrapedOnce(t *testing.T) {
	first := startDemo(t, 20, demo.Config{})
	port := portOf(t, first.srv.URL)
	first.srv.Close()
	var hits [2]atomic.Int64
	for i, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		w := demo.New(demo.Config{})
		w.SetLoad(20)
		h := w.Handler()
		startOn(t, net.JoinHostPort(ip, port), http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			h.ServeHTTP(rw, r)
		}))
	}
	res := &fakeResolver{}
	res.set("web.ns.svc", "127.0.0.1", "127.0.0.2", "169.254.169.254")
	res.set("web.ns.svc.cluster.local", "127.0.0.2", "127.0.0.1", "169.254.169.254")
	src := newSource(t, Options{
		Targets: targets(t,
			"http://127.0.0.2:"+port+"/metrics",
			"dns+http://web.ns.svc:"+port+"/metrics",
			"dns+http://web.ns.svc.cluster.local:"+port+"/metrics",
			"http://[::ffff:127.0.0.1]:"+port+"/metrics",
		),
		Allow:    mustAllow(t, "*.svc,*.svc.cluster.local,127.0.0.0/8"),
		Resolver: res,
		Timeout:  time.Second,
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range obs.Replicas {
		names = append(names, r.Name)
	}
	want := []string{"http://127.0.0.1:" + port + "/metrics", "http://127.0.0.2:" + port + "/metrics"}
	if !slices.Equal(names, want) {
		t.Errorf("replicas %v, want %v", names, want)
	}
	if len(obs.Missing) != 1 || obs.Missing[0].Name != "http://169.254.169.254:"+port+"/metrics" {
		t.Errorf("missing %+v, want the refused address once", obs.Missing)
	}
	for i := range hits {
		if n := hits[i].Load(); n != 1 {
			t.Errorf("pod %d scraped %d times in one sample", i, n)
		}
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://web.ns.svc/metrics":             "http://web.ns.svc:80/metrics?",
		"https://web.ns.svc/metrics":            "https://web.ns.svc:443/metrics?",
		"http://10.0.0.1:80/metrics":            "http://10.0.0.1:80/metrics?",
		"http://[::ffff:10.0.0.1]:9100/metrics": "http://10.0.0.1:9100/metrics?",
		"http://[fd00::1]:9100/m?x=1":           "http://[fd00::1]:9100/m?x=1",
	} {
		tg, err := target.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := endpoint(tg.URL); got != want {
			t.Errorf("endpoint(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestDialGuard: a static name the patterns allow, resolved by the system
// resolver into loopback, is refused at dial time.
func TestDialGuard(t *testing.T) {
	r := startDemo(t, 10, demo.Config{})
	port := portOf(t, r.srv.URL)
	src := newSource(t, Options{
		Targets: targets(t, "http://localhost:"+port+"/metrics", r.url()),
		Allow:   mustAllow(t, "*,127.0.0.1/32"),
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 127.0.0.1 is allowed explicitly, so localhost (which resolves there)
	// passes too; with only "*" it must not.
	if len(obs.Replicas) != 2 {
		t.Fatalf("%+v", obs)
	}
	src = newSource(t, Options{
		Targets: targets(t, "http://localhost:"+port+"/metrics", r.url()),
		Allow:   mustAllow(t, "*"),
	})
	if _, err := src.Observe(context.Background()); err == nil || !strings.Contains(err.Error(), allow.EnvVar) {
		t.Fatalf("dial into loopback not refused: %v", err)
	}
}

func portOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}
