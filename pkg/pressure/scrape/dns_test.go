package scrape

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/allow"
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
// address the allow-list refuses, and a name that does not resolve, are
// named and left out.
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
	src := newSource(t, Options{
		Targets:  targets(t, "dns+http://web.ns.svc:"+port+"/metrics", "dns+http://gone.ns.svc:"+port),
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
	missingErr(t, missing, "dns+http://gone.ns.svc:"+port+"/metrics", "no such host")
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
	if res.calls != 4 {
		t.Errorf("resolver called %d times over 2 samples of 2 DNS targets", res.calls)
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

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"http://Web.NS.svc:8080":             "http://web.ns.svc:8080/metrics",
		"https://web.ns.svc/custom?x=1":      "https://web.ns.svc/custom?x=1",
		"DNS+HTTP://web.ns.svc:9100/metrics": "dns+http://web.ns.svc:9100/metrics",
		"http://[fd00::1]:80/m":              "http://[fd00::1]:80/m",
	} {
		tg, err := ParseTarget(in)
		if err != nil || tg.String() != want {
			t.Errorf("ParseTarget(%q) = %q, %v; want %q", in, tg.String(), err, want)
		}
	}
	for _, in := range []string{"", "ftp://x/", "dns+https://x:1/", "http://user:pw@x/", "http:///metrics", "http://x/#frag", "web.ns.svc:80", "mailto:x@y"} {
		if tg, err := ParseTarget(in); err == nil {
			t.Errorf("ParseTarget(%q) accepted: %v", in, tg)
		}
	}
}
