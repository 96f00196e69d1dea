package registry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// queued is one replica with pending work, busy.
func queued(pending float64) pressure.Observation {
	return pressure.Observation{
		Replicas: []pressure.ReplicaObservation{{Name: "r0"}},
		Queue:    &pressure.QueueObservation{Backlog: []pressure.ClassBacklog{{Class: "default", Ready: pending}}, Busy: 1},
	}
}

// Two ScaledObjects in one pool, each with its own sampler on one fake
// clock: every tick adds one replica across the pool, to the member short
// of work, whichever sampler runs first.
func TestRegistryPoolOneStepPerTick(t *testing.T) {
	// The sources fail until both members have joined: a sampler samples
	// as soon as it starts, and a member that samples alone would decide
	// the pool's first tick alone (as it does in production, where KEDA
	// asks for the members one by one).
	down := errors.New("not yet")
	scripts := map[string]*registrytest.Script{"light": registrytest.Failing(down), "heavy": registrytest.Failing(down)}
	sources := trigger.NewSchema(registrytest.Kind("scripted", "", func(name string) *registrytest.Script { return scripts[name] }))
	clock := samplingtest.NewFakeClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	reg := registrytest.NewRegistry(t, registry.Config{Schema: sources, DefaultInterval: 5 * time.Second, Clock: clock})
	acquire := func(name, script string, extra ...string) (*registry.Target, error) {
		raw := map[string]string{"source": "scripted", "script": script, "policy": "fully_elastic", "pool": "gpu"}
		for i := 0; i+1 < len(extra); i += 2 {
			raw[extra[i]] = extra[i+1]
		}
		md, err := reg.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return reg.Acquire(registry.Ref{Namespace: "ml", Name: name}, md)
	}
	light, err := acquire("light", "light")
	if err != nil {
		t.Fatal(err)
	}
	heavy, err := acquire("heavy", "heavy")
	if err != nil {
		t.Fatal(err)
	}

	var me *keyschema.MetadataError
	if _, err := acquire("odd", "heavy", "maxReplicas", "3"); !errors.As(err, &me) || me.Key != "pool" || !strings.Contains(err.Error(), `pool "gpu" is decided with`) {
		t.Fatalf("a member with other options: %v", err)
	}

	registrytest.WaitSamples(t, light, 1)
	registrytest.WaitSamples(t, heavy, 1)
	scripts["light"].Set(queued(1))
	scripts["heavy"].Set(queued(4))
	for tick := 1; tick <= 3; tick++ {
		clock.Tick(t, 5*time.Second)
		registrytest.WaitSamples(t, light, uint64(tick+1))
		registrytest.WaitSamples(t, heavy, uint64(tick+1))
		ups := 0
		for _, ev := range reg.AllEvents() {
			if ev.Action == policy.ScaleUp {
				ups++
				if ev.Target != heavy.Key {
					t.Errorf("tick %d: step on %s, want the heavy member", tick, ev.Target)
				}
			}
		}
		if ups != tick {
			t.Fatalf("tick %d: %d scale-ups in all, want one per tick:\n%+v", tick, ups, reg.AllEvents())
		}
	}
	if got := heavy.Load().Signal; got.RecommendedReplicas != 4 || got.Policy != "fully_elastic" || got.ScaleValue != 4 {
		t.Errorf("heavy publishes %+v, want 4 replicas (1 + 3 steps)", got)
	}
	if got := light.Load().Signal; got.RecommendedReplicas != 1 || got.Action != "no-op" {
		t.Errorf("light publishes %d %q, want 1, no-op", got.RecommendedReplicas, got.Action)
	}
	if d := heavy.Decisions(); d["scale_up"] != 3 || heavy.Policy() != "fully_elastic" {
		t.Errorf("heavy decisions %v", d)
	}
	for _, info := range reg.List() {
		if info.Policy != "fully_elastic" {
			t.Errorf("listed %s with policy %q", info.Key, info.Policy)
		}
	}
	served, err := reg.Serving(registry.Ref{Namespace: "ml", Name: "light"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := reg.Events(served); len(ev) == 0 || ev[len(ev)-1].Target != light.Key || ev[len(ev)-1].ScaledObject != "ml/light" {
		t.Errorf("light's events %+v", ev)
	}
}
