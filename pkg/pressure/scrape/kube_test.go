package scrape

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
)

// fakeDiscovery answers from a table; package kube's tests cover reading
// the table from EndpointSlices.
type fakeDiscovery struct {
	eps      map[string][]discovery.Endpoint // by service
	acquired map[string]int
}

func (f *fakeDiscovery) Acquire(ns string) (discovery.Namespace, func()) {
	f.acquired[ns]++
	return fakeNamespace{f}, func() { f.acquired[ns]-- }
}

type fakeNamespace struct{ f *fakeDiscovery }

func (n fakeNamespace) Endpoints(_ context.Context, svc, _ string) ([]discovery.Endpoint, error) {
	eps, ok := n.f.eps[svc]
	if !ok {
		return nil, errors.Join(errors.New("service shop/"+svc), discovery.ErrNoService)
	}
	return eps, nil
}

// TestKubeExpansion: ready endpoints are scraped and named by their pods;
// starting and terminating ones are named, not scraped; the allow-list
// vets every address; a missing Service fails the sample naming it; a
// Service with no endpoints is zero replicas; the namespace is acquired on
// first use and released by Close.
func TestKubeExpansion(t *testing.T) {
	first := startDemo(t, 20, demo.Config{})
	port := portOf(t, first.srv.URL)
	first.srv.Close()
	for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		w := demo.New(demo.Config{})
		w.SetLoad(40)
		startOn(t, net.JoinHostPort(ip, port), w.Handler())
	}
	p, _ := strconv.Atoi(port)
	at := func(ip, pod string, s discovery.State) discovery.Endpoint {
		return discovery.Endpoint{Addr: netip.MustParseAddr(ip), Port: uint16(p), Pod: pod, State: s}
	}
	disc := &fakeDiscovery{acquired: map[string]int{}, eps: map[string][]discovery.Endpoint{
		"web": {
			at("127.0.0.1", "web-a", discovery.Ready), at("127.0.0.2", "web-b", discovery.Ready),
			at("127.0.0.3", "web-c", discovery.Starting), at("127.0.0.4", "web-d", discovery.Terminating),
			at("169.254.169.254", "web-e", discovery.Ready),
		},
		"empty": nil,
	}}
	src := newSource(t, Options{
		Targets: targets(t, "k8s://web:"+port, "k8s://empty:metrics"), Allow: mustAllow(t, "*.svc,127.0.0.0/8"),
		Discovery: disc, Namespace: "shop", Timeout: time.Second,
	})
	if disc.acquired["shop"] != 0 {
		t.Fatal("New acquired the namespace: it must do no I/O")
	}
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range obs.Replicas {
		names = append(names, r.Name+"/"+r.Pod)
	}
	if got := strings.Join(names, " "); got != "web-a/web-a web-b/web-b" {
		t.Errorf("replicas %s, want the ready pods by name", got)
	}
	if len(obs.Missing) != 1 || obs.Missing[0].Name != "web-e" || !errors.As(obs.Missing[0].Err, new(*allow.RefusedError)) {
		t.Errorf("missing %+v, want web-e refused by the allow-list", obs.Missing)
	}
	if strings.Join(obs.Starting, ",") != "web-c" || strings.Join(obs.Terminating, ",") != "web-d" {
		t.Errorf("starting %v terminating %v", obs.Starting, obs.Terminating)
	}
	if disc.acquired["shop"] != 1 {
		t.Errorf("acquired %v, want the namespace once", disc.acquired)
	}
	if _, err := src.Observe(context.Background()); err != nil || disc.acquired["shop"] != 1 {
		t.Errorf("second sample: %v, acquired %v", err, disc.acquired)
	}
	src.Close()
	if disc.acquired["shop"] != 0 {
		t.Errorf("after Close: acquired %v", disc.acquired)
	}

	zero := newSource(t, Options{Targets: targets(t, "k8s://empty:9100"), Discovery: disc, Namespace: "shop"})
	if obs, err := zero.Observe(context.Background()); err != nil || len(obs.Replicas)+len(obs.Missing) != 0 {
		t.Errorf("no endpoints: %+v, %v; want zero replicas", obs, err)
	}
	gone := newSource(t, Options{Targets: targets(t, "k8s://wbe:9100"), Discovery: disc, Namespace: "shop"})
	if _, err := gone.Observe(context.Background()); !errors.Is(err, discovery.ErrNoService) || !strings.Contains(err.Error(), "wbe") {
		t.Errorf("missing Service: %v, want a failed sample naming it", err)
	}
	if _, err := New(Options{Targets: targets(t, "k8s://web:80")}); err == nil {
		t.Error("a k8s:// target without a discovery was accepted")
	}
}
