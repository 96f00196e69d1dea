package metrics_test

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

// Decisions are counted per action, every action from the start; cost and
// replica-seconds are the snapshot's.
func TestDecisionAndCostCounters(t *testing.T) {
	jobs := registrytest.Returning(pressure.Observation{
		Replicas: []pressure.ReplicaObservation{{Name: "a"}, {Name: "b"}},
		Queue:    &pressure.QueueObservation{Backlog: []pressure.ClassBacklog{{Class: "default", Ready: 3}}, Busy: 2},
	})
	f := newFixture(t, map[string]*registrytest.Script{"busy": busy(), "jobs": jobs})
	tg := f.acquire(t, registry.Ref{Namespace: "ns", Name: "jobs"},
		map[string]string{"source": "scripted", "script": "jobs", "policy": "fully_elastic", "costPerReplicaSecond": "0.25"})
	pr := f.acquire(t, registry.Ref{Namespace: "ns", Name: "app"}, map[string]string{"source": "scripted", "script": "busy", "profile": "responsive"})
	m := metrics.New(f.reg)

	f.clock.Tick(t, interval)
	for _, x := range []*registry.Target{tg, pr} {
		deadline := time.After(10 * time.Second)
		for snap := x.Load(); snap.Samples < 2; snap = x.Load() {
			select {
			case <-snap.Next():
			case <-deadline:
				t.Fatal("no second sample")
			}
		}
	}
	fams := scrape(t, m)
	for _, c := range []struct {
		name string
		lbl  map[string]string
		want float64
	}{
		// 2 replicas, 3 pending: +1 at the first tick, then 2 + 1 in
		// flight = the target of 3.
		{"barometer_decisions_total", map[string]string{"target": tg.Key, "policy": "fully_elastic", "action": "scale_up"}, 1},
		{"barometer_decisions_total", map[string]string{"target": tg.Key, "policy": "fully_elastic", "action": "no-op"}, 1},
		{"barometer_decisions_total", map[string]string{"target": tg.Key, "policy": "fully_elastic", "action": "scale_down"}, 0},
		{"barometer_decisions_total", map[string]string{"target": pr.Key, "policy": "pressure", "action": "scale_up"}, 1},
		{"barometer_decisions_total", map[string]string{"target": pr.Key, "policy": "pressure", "action": "no-op"}, 1},
		{"barometer_replica_seconds_total", map[string]string{"target": tg.Key}, 10},
		{"barometer_replica_cost_total", map[string]string{"target": tg.Key}, 2.5},
		{"barometer_replica_seconds_total", map[string]string{"target": pr.Key}, 10},
		{"barometer_replica_cost_total", map[string]string{"target": pr.Key}, 0},
	} {
		if got := value(t, fams, c.name, c.lbl); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.lbl, got, c.want)
		}
	}
	if fams["barometer_decisions_total"].GetType().String() != "COUNTER" || fams["barometer_replica_cost_total"].GetType().String() != "COUNTER" {
		t.Error("decision and cost series must be counters")
	}
}
