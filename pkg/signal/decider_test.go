package signal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// countingDecider publishes the replica count it was given as the value,
// and fails when told to.
type countingDecider struct {
	calls []Input
	fail  error
}

func (d *countingDecider) WarmingUp() ScalingSignal {
	return ScalingSignal{Reason: ReasonWarmingUp, Policy: "counting"}
}

func (d *countingDecider) Decide(now time.Time, obs pressure.Observation, in Input) (ScalingSignal, error) {
	d.calls = append(d.calls, in)
	if d.fail != nil {
		return ScalingSignal{}, d.fail
	}
	return ScalingSignal{ScaleValue: float64(len(obs.Replicas)), Policy: "counting", Action: "no-op", SampledAt: now}, nil
}

// A Decider replaces the computer: it gets the collectors' results, may
// fold an observation with no replica (a policy can scale from zero), and
// its error fails the sample like a source's.
func TestSamplerWithADecider(t *testing.T) {
	clock := newFakeClock()
	d := &countingDecider{}
	noReplicas := func() (pressure.Observation, error) { return pressure.Observation{}, nil }
	src := &scripted{steps: []func() (pressure.Observation, error){replicas(0.5, 0.7), noReplicas, replicas(0.9)}}
	s := NewSampler(SamplerConfig{Source: src, Decider: d, Options: DefaultOptions(), Interval: 5 * time.Second, Clock: clock})
	if w := s.Load().Signal; w.Policy != "counting" || !w.WarmingUp() {
		t.Fatalf("warming up: %+v", w)
	}
	if snap := s.SampleOnce(context.Background()); snap.LastErr != nil || snap.Signal.ScaleValue != 2 || snap.Signal.Policy != "counting" {
		t.Fatalf("first sample: %+v", snap)
	}
	if got := d.calls[0].Compute; got.ReplicaCount != 2 || got.Resource != 0.7 {
		t.Errorf("the decider got compute %+v, want the collector's", got)
	}
	clock.Advance(5 * time.Second)
	if snap := s.SampleOnce(context.Background()); snap.LastErr != nil || snap.Signal.ScaleValue != 0 || !snap.Signal.SampledAt.Equal(clock.Now()) {
		t.Fatalf("no replicas: %+v, want folded by the decider", snap)
	}
	d.fail = errors.New("policy broke")
	clock.Advance(5 * time.Second)
	snap := s.SampleOnce(context.Background())
	if !errors.Is(snap.LastErr, d.fail) || snap.Failures != 1 || snap.Signal.ScaleValue != 0 || snap.Signal.SampledAt.Equal(clock.Now()) {
		t.Fatalf("failed decision: %+v, want the previous signal and the error", snap)
	}
}

func TestComputerSignalsArePressure(t *testing.T) {
	c := NewComputer(DefaultOptions())
	if c.WarmingUp().Policy != PolicyPressure {
		t.Error("warming-up signal without the pressure policy")
	}
	sig, err := c.Decide(t0, pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a"}}}, Input{})
	if err != nil || sig.Policy != PolicyPressure || sig.Action != "" {
		t.Errorf("Decide: %+v %v", sig, err)
	}
	missing := pressure.Observation{Missing: []pressure.MissingReplica{{Name: "a", Err: errors.New("timeout")}}}
	if _, err := c.Decide(t0, missing, Input{}); err == nil {
		t.Error("the computer folded an observation in which no replica answered")
	}
}

// A source that answered and saw no replica (scaled to zero) is a valid
// sample, as replicas = max(1, replicaCount) reads it (docs/semantics.md,
// "Dominant dimension x replicas"): zero pressure across one replica, so
// the signal stays fresh and KEDA's fallback does not flap. Only a sample
// in which replicas were expected and none answered fails.
func TestComputerFoldsZeroReplicas(t *testing.T) {
	o := DefaultOptions()
	o.ScaleInGateWindow = 0
	c := NewComputer(o)
	if _, err := c.Decide(t0, pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.9}}}, Input{}); err != nil {
		t.Fatal(err)
	}
	sig, err := c.Decide(t0.Add(5*time.Second), pressure.Observation{}, Input{})
	if err != nil || sig.RawScaleValue != 0 || sig.Reason != "activation pressure 0.00 across 1 replica(s)" || !sig.SampledAt.Equal(t0.Add(5*time.Second)) {
		t.Errorf("zero replicas: %+v, %v; want zero pressure across 1 replica, sampled now", sig, err)
	}
	if err := Unanswered(pressure.Observation{}); err != nil {
		t.Errorf("Unanswered(no replica, none missing) = %v", err)
	}
	err = Unanswered(pressure.Observation{Missing: []pressure.MissingReplica{{Name: "a", Err: errors.New("timeout")}}})
	if err == nil || !strings.Contains(err.Error(), "no replica answered") || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("Unanswered(all missing) = %v", err)
	}
}
