package decide

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// t0 is the fake time origin; at(s) is s seconds later. Deciders take time
// as an argument, so the tests drive them sample by sample.
var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// sample is visible replicas at CPU cpu with the queue q (nil: no queue).
func sample(visible int, cpu float64, q *pressure.QueueObservation) pressure.Observation {
	obs := pressure.Observation{Queue: q}
	for i := range visible {
		obs.Replicas = append(obs.Replicas, pressure.ReplicaObservation{Name: fmt.Sprintf("r%d", i), CPUUtilisation: cpu})
	}
	return obs
}

// queue is a queue view with ready work of class "default" and busy slots.
func queue(ready, busy float64) *pressure.QueueObservation {
	return &pressure.QueueObservation{Backlog: []pressure.ClassBacklog{{Class: "default", Ready: ready}}, Busy: busy}
}

// decideAt runs one sample through r the way the sampler does.
func decideAt(t *testing.T, r Decider, now time.Time, obs pressure.Observation) signal.ScalingSignal {
	t.Helper()
	sig, err := r.Decide(now, obs, signal.Input{Compute: pressure.ComputeCollector{}.Collect(obs)})
	if err != nil {
		t.Fatalf("Decide at %s: %v", now.Sub(t0), err)
	}
	return sig
}

// spec is the metadata of a trigger of policy name, its keys set by the
// tests as a ScaledObject would.
func spec(name string) map[string]string { return map[string]string{"policy": name} }

// parse reads a test trigger the way the scaler does, at a 5s interval
// unless the spec says otherwise; the pressure computer's smoothing and gate
// are off (the computer's own tests cover them), on the original profile.
func parse(t *testing.T, s map[string]string) *trigger.Trigger {
	t.Helper()
	raw := map[string]string{"sampleInterval": "5s"}
	if s["policy"] == signal.PolicyPressure {
		raw["profile"], raw["ewmaHalfLife"], raw["scaleInGateWindow"] = signal.ProfileOriginal, "0s", "0s"
	}
	maps.Copy(raw, s)
	tr, err := trigger.NewSchema(host.Kind()).Parse(raw, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func newRunner(t *testing.T, e *Engine, key string, s map[string]string) Decider {
	t.Helper()
	r, err := e.New(key, parse(t, s).Spec, nil, t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// step is one expected decision: action, before and after.
type step struct {
	action        policy.Action
	before, after int
}

// steps are the decisions the events record, the no-ops folded into an
// entry (its Repeats, each at the count it left) included.
func steps(ev []ledger.Event) []step {
	out := make([]step, 0, len(ev))
	for _, e := range ev {
		out = append(out, step{e.Action, e.Before, e.After})
		for range e.Repeats {
			out = append(out, step{policy.NoOp, e.After, e.After})
		}
	}
	return out
}

// missing adds n replicas that did not answer to obs.
func missing(obs pressure.Observation, n int) pressure.Observation {
	for i := range n {
		obs.Missing = append(obs.Missing, pressure.MissingReplica{Name: fmt.Sprintf("m%d", i), Err: errors.New("scrape timed out")})
	}
	return obs
}
