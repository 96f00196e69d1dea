package registry

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// constSpec is a source with fixed pressure, standing in for a workload
// because the registry's bookkeeping, not sampling, is under test.
type constSpec string

func (c constSpec) Key() string { return "const:" + string(c) }
func (c constSpec) New(*slog.Logger) (pressure.Source, error) {
	if c == "broken" {
		return nil, errors.New("cannot build")
	}
	return pressure.SourceFunc(func(context.Context) (pressure.Observation, error) {
		return pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}}}, nil
	}), nil
}

// testSources offers the host and constSpec as source "const" (key "name").
func testSources() *trigger.Schema {
	type config struct{ name string }
	keys := []keyschema.Key[config]{keyschema.String("name", func(c *config) *string { return &c.name }, "x", "any name", nil)}
	return trigger.NewSchema(host.Kind(), sourcekind.New("const", "fixed pressure", func() config { return config{} }, keys, nil,
		func(c config) (sourcekind.Spec, error) { return constSpec(c.name), nil }))
}

func TestRegistryLifecycle(t *testing.T) {
	clock := samplingtest.NewFakeClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) // never ticked: the test reaps by hand
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := NewRegistry(ctx, Config{Schema: testSources(), IdleTimeout: time.Minute, Clock: clock})
	parse := func(raw map[string]string) *trigger.Trigger {
		md, err := reg.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return md
	}
	def, err := reg.SetDefault(parse(map[string]string{"source": "const", "name": "default"}))
	if err != nil {
		t.Fatal(err)
	}
	orders := Ref{Namespace: "shop", Name: "orders"}
	// The original profile: the target is read-side only (the responsive
	// profile's surge reads it).
	a, _ := reg.Acquire(orders, parse(map[string]string{"source": "const", "name": "q", "profile": "original"}))
	b, _ := reg.Acquire(Ref{Namespace: "shop", Name: "billing"}, parse(map[string]string{"source": "const", "name": "q", "profile": "original", "targetPressure": "0.3"}))
	if a != b {
		t.Fatal("same source and signal options did not share a sampler")
	}
	if snap := a.WaitFirst(ctx, 5*time.Second); snap.Signal.WarmingUp() {
		t.Fatal("first sample never came")
	}
	if got, err := reg.Serving(orders); err != nil || got.Target != a {
		t.Fatalf("Lookup: %v %v", got, err)
	}
	if _, err := reg.Serving(Ref{Namespace: "x", Name: "y"}); !errors.Is(err, ErrUnknownRef) {
		t.Fatalf("unknown ref: %v", err)
	}
	if _, err := reg.Acquire(orders, parse(map[string]string{"source": "const", "name": "broken"})); err == nil {
		t.Fatal("a source that cannot be built was accepted")
	}
	list := reg.List()
	if len(list) != 2 || !list[1].Default && !list[0].Default {
		t.Fatalf("List: %+v", list)
	}

	clock.Advance(59 * time.Second)
	if n := reg.ReapIdle(); n != 0 {
		t.Fatalf("reaped %d before the idle timeout", n)
	}
	reg.Touch(a)
	clock.Advance(59 * time.Second)
	if n := reg.ReapIdle(); n != 0 {
		t.Fatalf("reaped %d a touched target", n)
	}
	clock.Advance(2 * time.Second)
	if n := reg.ReapIdle(); n != 1 {
		t.Fatalf("reaped %d, want the idle shared target only", n)
	}
	if _, err := reg.Serving(orders); !errors.Is(err, ErrUnknownRef) {
		t.Fatalf("reaped target still looked up: %v", err)
	}
	if got, _ := reg.Default(); got.Target != def || len(reg.List()) != 1 {
		t.Fatal("the default target must never be reaped")
	}
}

// TestFromEnvKeys: KEDA forwards xFromEnv under that name with the resolved
// value; it reads as x, and errors name the key the trigger wrote.
func TestLookupWithSeveralTriggersAndStreams(t *testing.T) {
	clock := samplingtest.NewFakeClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := NewRegistry(ctx, Config{Schema: testSources(), IdleTimeout: 2 * time.Minute, Clock: clock})
	acquire := func(ref Ref, name string) *Target {
		md, err := reg.Parse(map[string]string{"source": "const", "name": name})
		if err != nil {
			t.Fatal(err)
		}
		tg, err := reg.Acquire(ref, md)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	ref := Ref{Namespace: "shop", Name: "orders"}
	// Two live triggers, asked for alternately: every lookup gives the same
	// one, and /targets lists the ScaledObject under both.
	a, b := acquire(ref, "a"), acquire(ref, "b")
	first := a
	if b.Key < a.Key {
		first = b
	}
	for range 3 {
		acquire(ref, "b")
		if got, _ := reg.Serving(ref); got.Target != first {
			t.Fatalf("lookup %s, want the first live trigger by key %s", got.Target.Key, first.Key)
		}
		acquire(ref, "a")
	}
	for _, info := range reg.List() {
		if len(info.ScaledObjs) != 1 || info.ScaledObjs[0] != ref {
			t.Fatalf("%s lists %v", info.Key, info.ScaledObjs)
		}
	}
	// Trigger a is edited away: once KEDA has not asked for it for a
	// while, b serves the ScaledObject, though a still runs.
	clock.Advance(90 * time.Second)
	acquire(ref, "b")
	if got, _ := reg.Serving(ref); got.Target != b {
		t.Fatalf("lookup %s after a went quiet, want %s", got.Target.Key, b.Key)
	}
	// A stream holds its target past the idle timeout.
	release := reg.Hold(a)
	clock.Advance(3 * time.Minute)
	if n := reg.ReapIdle(); n != 1 {
		t.Fatalf("reaped %d, want only the target without a stream", n)
	}
	release()
	clock.Advance(3 * time.Minute)
	if n := reg.ReapIdle(); n != 1 {
		t.Fatalf("reaped %d after the stream ended, want 1", n)
	}
}

// The end of the registry's context stops every sampler, and one acquired
// after it stops at once.
func TestContextEndStopsEverySampler(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	reg := NewRegistry(ctx, Config{Schema: testSources(), IdleTimeout: time.Minute})
	acquire := func(name string) *Target {
		t.Helper()
		md, err := reg.Parse(map[string]string{"source": "const", "name": name})
		if err != nil {
			t.Fatal(err)
		}
		tg, err := reg.Acquire(Ref{Namespace: "shop", Name: name}, md)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	before := acquire("before")
	cancel()
	after := acquire("after")
	for _, tg := range []*Target{before, after} {
		select {
		case <-tg.done:
		case <-time.After(5 * time.Second):
			t.Fatalf("sampler %s still running after the registry's context ended", tg.Key)
		}
	}
}

// A repeated call is a lookup whatever the metadata's shape: the source
// alone, with the address KEDA itself reads, or a full trigger. A lookup
// returns the trigger parsed the first time; a parse would return a new
// one. A ScaledObject's metadata without a source (KEDA sends no map for a
// trigger without metadata) is refused, naming the key.
func TestResolveIsALookupForEveryMetadataShape(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := NewRegistry(ctx, Config{Schema: testSources(), IdleTimeout: time.Minute})
	for _, c := range []struct {
		name string
		raw  map[string]string
	}{
		{"source", map[string]string{"source": "const"}},
		{"scalerAddress", map[string]string{"source": "const", "scalerAddress": "barometer.keda.svc:6000"}},
		{"full", map[string]string{"source": "const", "name": "q", "scalerAddress": "barometer.keda.svc:6000", "minReplicas": "2"}},
	} {
		ref := Ref{Namespace: "shop", Name: c.name}
		first, firstTr, err := reg.Resolve(ref, c.raw)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		again, againTr, err := reg.Resolve(ref, c.raw)
		if err != nil {
			t.Fatalf("%s again: %v", c.name, err)
		}
		if again != first || againTr != firstTr {
			t.Errorf("%s: the second call parsed the metadata again (trigger %p, then %p)", c.name, firstTr, againTr)
		}
	}
	for _, raw := range []map[string]string{nil, {}, {"scalerAddress": "barometer.keda.svc:6000"}} {
		var me *keyschema.MetadataError
		if _, _, err := reg.Resolve(Ref{Namespace: "shop", Name: "unsourced"}, raw); !errors.As(err, &me) || me.Key != "source" {
			t.Errorf("%v: err = %v, want the source key required", raw, err)
		}
	}
}

// A cached Resolve takes no lock the registry holds for O(n) work (a
// listing, a reap): with the registry's lock held, as a walk of every
// target holds it, a cached read still completes. The minute is a bound
// against a deadlock, not a timing.
func TestCachedResolveTakesNoRegistryLock(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := NewRegistry(ctx, Config{Schema: testSources(), IdleTimeout: time.Minute})
	ref, raw := Ref{Namespace: "shop", Name: "orders"}, map[string]string{"source": "const"}
	first, _, err := reg.Resolve(ref, raw)
	if err != nil {
		t.Fatal(err)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	done := make(chan *Target)
	go func() {
		tg, _, err := reg.Resolve(ref, raw)
		if err != nil {
			t.Error(err)
		}
		tg.Load()
		done <- tg
	}()
	select {
	case tg := <-done:
		if tg != first {
			t.Errorf("the cached read found %v, want %v", tg, first)
		}
	case <-time.After(time.Minute):
		t.Fatal("a cached Resolve waited on the registry's lock")
	}
}
