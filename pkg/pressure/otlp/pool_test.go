package otlp_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

type anyNamespace struct{}

func (anyNamespace) Namespace(claimed string) (string, bool) { return claimed, claimed != "" }

// pushAt stores one push of pod at the bubble's now: a working set of
// 60,000 (0.6 of the default activation target).
func pushAt(t *testing.T, st *store.Store, pods ...string) {
	t.Helper()
	var rms []*metricspb.ResourceMetrics
	for _, pod := range pods {
		rms = append(rms, rm("team-a", "shop", pod, gauge(exposition.Activations, numberPoint(time.Now(), time.Time{}, 60_000))))
	}
	if res, err := st.Ingest(rms, anyNamespace{}); err != nil || res.Accepted != len(pods) {
		t.Fatalf("push of %v: %+v %v", pods, res, err)
	}
}

func poolSource(t *testing.T, st *store.Store, pods discovery.Discovery, service string) *otlp.Source {
	t.Helper()
	s, err := otlp.New(st, otlp.Config{Namespace: "team-a", Selector: map[string]string{"k8s.deployment.name": "shop"},
		MaxAge: 10 * time.Second, Names: exposition.DefaultNames(), HeldSince: st.HeldSince, Pool: pods, PoolService: service}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func names(rs []pressure.ReplicaObservation) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// Without Kubernetes, a scaler that has just started cannot know how many
// replicas pushed before: its samples wait until maxAge has passed, by
// when every replica exporting within maxAge has pushed again, and never
// read the replicas heard so far as the whole pool. A store that took a
// peer's state holds every push from the peer's start on, and waits for
// nothing.
func TestStartWaitsMaxAgeWithoutPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newStoreNow(t)
		src := poolSource(t, st, nil, "")
		ctx := context.Background()
		// Four replicas export every 3 s at their own phases: the first
		// has pushed by 1 s, the last by 3 s.
		for i, pod := range []string{"shop-1", "shop-2", "shop-3", "shop-4"} {
			time.Sleep(time.Duration(i+1)*time.Second - sinceStart(st))
			pushAt(t, st, pod)
			if _, err := src.Observe(ctx); err == nil || !strings.Contains(err.Error(), "waiting for the pool") {
				t.Fatalf("%s after the start, with %d of 4 pushed: %v, want a sample that waits", sinceStart(st), i+1, err)
			}
		}
		time.Sleep(10*time.Second - sinceStart(st))
		obs, err := src.Observe(ctx)
		if err != nil || len(obs.Replicas) != 4 {
			t.Fatalf("maxAge after the start: %v %v, want the four replicas", names(obs.Replicas), err)
		}

		restarted := newStoreNow(t)
		pushAt(t, restarted, "shop-1")
		restarted.Restored(time.Now().Add(-time.Hour))
		if obs, err := poolSource(t, restarted, nil, "").Observe(ctx); err != nil || len(obs.Replicas) != 1 {
			t.Fatalf("a store that took a peer's state: %v %v, want its replica read at once", names(obs.Replicas), err)
		}
	})
}

// With the workload's Service, the pool is its ready pods: a sample waits
// until each has pushed, names starting and terminating pods without
// reading them, and reads a ready pod that has not pushed within maxAge of
// turning ready as missing.
func TestPoolWaitsForEveryReadyPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newStoreNow(t)
		pods := &fakePods{}
		pods.set("shop-1", "shop-2", "shop-3", "shop-4")
		pods.add("shop-5", discovery.Starting)
		pods.add("shop-0", discovery.Terminating)
		src := poolSource(t, st, pods, "shop")
		ctx := context.Background()

		pushAt(t, st, "shop-0", "shop-1", "shop-2")
		_, err := src.Observe(ctx)
		if err == nil || !strings.Contains(err.Error(), "waiting for 2 of the 4 ready pods") || !strings.Contains(err.Error(), "shop-3, shop-4") {
			t.Fatalf("two ready pods not heard: %v, want a sample that waits for them", err)
		}
		time.Sleep(time.Second)
		pushAt(t, st, "shop-3", "shop-4", "shop-9") // shop-9: a pusher the Service does not list yet
		obs, err := src.Observe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(obs.Replicas); !slices.Equal(got, []string{"shop-1", "shop-2", "shop-3", "shop-4", "shop-9"}) ||
			!slices.Equal(obs.Starting, []string{"shop-5"}) || !slices.Equal(obs.Terminating, []string{"shop-0"}) {
			t.Fatalf("whole pool: replicas %v, starting %v, terminating %v", got, obs.Starting, obs.Terminating)
		}

		// A pod that turns ready and never pushes holds samples for
		// maxAge, then is read as missing.
		pods.add("shop-6", discovery.Ready)
		for i := range 10 {
			if i > 0 {
				time.Sleep(time.Second)
				pushAt(t, st, "shop-1", "shop-2", "shop-3", "shop-4")
			}
			if _, err := src.Observe(ctx); err == nil || !strings.Contains(err.Error(), "shop-6") {
				t.Fatalf("%d s after shop-6 turned ready: %v, want a sample that waits for it", i, err)
			}
		}
		time.Sleep(time.Second)
		pushAt(t, st, "shop-1", "shop-2", "shop-3", "shop-4")
		obs, err = src.Observe(ctx)
		if err != nil || len(obs.Replicas) != 5 || len(obs.Missing) != 1 || obs.Missing[0].Name != "shop-6" || // shop-9 pushed maxAge ago: still fresh

			!strings.Contains(obs.Missing[0].Err.Error(), "ready in Service shop") {
			t.Fatalf("maxAge after shop-6 turned ready: replicas %v, missing %+v, %v", names(obs.Replicas), obs.Missing, err)
		}

		// A Service that does not exist fails the sample, naming it.
		if _, err := poolSource(t, st, pods, "shpo").Observe(ctx); err == nil || !strings.Contains(err.Error(), "shpo") {
			t.Errorf("a missing Service: %v", err)
		}
	})
}

func newStoreNow(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.New(store.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func sinceStart(st *store.Store) time.Duration { return time.Since(st.HeldSince()) }

// fakePods stands in for the scaler's Kubernetes discovery (package kube,
// whose own tests run its informers against the API's JSON over HTTP, and
// the end-to-end suite against a real kube-apiserver): it answers the
// Service shop with the pods a test sets.
type fakePods struct {
	mu  sync.Mutex
	eps []discovery.Endpoint
}

func (f *fakePods) set(ready ...string) {
	for _, pod := range ready {
		f.add(pod, discovery.Ready)
	}
}

func (f *fakePods) add(pod string, state discovery.State) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eps = append(f.eps, discovery.Endpoint{Addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(len(f.eps) + 1)}), Pod: pod, State: state})
}

func (f *fakePods) Acquire(string) (discovery.Namespace, func()) { return f, func() {} }

func (f *fakePods) Endpoints(_ context.Context, service, _ string) ([]discovery.Endpoint, error) {
	if service != "shop" {
		return nil, fmt.Errorf("service team-a/%s: %w", service, discovery.ErrNoService) // as package kube says it
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.eps), nil
}
