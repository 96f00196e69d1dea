package decide

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// t0 is the fake time origin; at(s) is s seconds later. Runners take time
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
func decideAt(t *testing.T, r *Runner, now time.Time, obs pressure.Observation) signal.ScalingSignal {
	t.Helper()
	sig, err := r.Decide(now, obs, signal.Input{Compute: pressure.ComputeCollector{}.Collect(obs)})
	if err != nil {
		t.Fatalf("Decide at %s: %v", now.Sub(t0), err)
	}
	return sig
}

func spec(name string) Spec {
	s := Spec{Policy: name, LaunchTTL: policy.DefaultLaunchTTL}
	switch {
	case name == policy.PolicyQueue:
		s.Queue = policy.DefaultQueueOptions()
	case name != signal.PolicyPressure:
		s.Elasticity = policy.DefaultElasticityOptions(name)
	}
	return s
}

func newRunner(t *testing.T, e *Engine, key string, s Spec) *Runner {
	t.Helper()
	opts := signal.DefaultOptions()
	opts.ScaleInGateWindow, opts.EwmaHalfLife = 0, 0 // the computer's own tests cover them
	r, err := e.Runner(key, s, opts, 5*time.Second, t0, nil)
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

func steps(ev []policy.Event) []step {
	out := make([]step, 0, len(ev))
	for _, e := range ev {
		out = append(out, step{e.Action, e.Before, e.After})
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
