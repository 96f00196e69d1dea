package sampling

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// countingDecider publishes the replica count it was given as the value,
// and fails when told to.
type countingDecider struct {
	calls []signal.Input
	fail  error
}

func (d *countingDecider) WarmingUp() signal.ScalingSignal {
	return signal.ScalingSignal{Reason: signal.ReasonWarmingUp, Policy: "counting"}
}

func (d *countingDecider) Decide(now time.Time, obs pressure.Observation, in signal.Input) (signal.ScalingSignal, error) {
	d.calls = append(d.calls, in)
	if d.fail != nil {
		return signal.ScalingSignal{}, d.fail
	}
	return signal.ScalingSignal{ScaleValue: float64(len(obs.Replicas)), Policy: "counting", Action: "no-op", SampledAt: now}, nil
}

func (d *countingDecider) Policy() string               { return "counting" }
func (d *countingDecider) Decisions() map[string]uint64 { return map[string]uint64{} }
func (d *countingDecider) Close()                       {}

// A Decider replaces the computer: it gets the collectors' results, may
// fold an observation with no replica (a policy can scale from zero), and
// its error fails the sample like a source's.
func TestSamplerWithADecider(t *testing.T) {
	clock := newFakeClock()
	d := &countingDecider{}
	noReplicas := func() (pressure.Observation, error) { return pressure.Observation{}, nil }
	src := &scripted{steps: []func() (pressure.Observation, error){replicas(0.5, 0.7), noReplicas, replicas(0.9)}}
	s := NewSampler(SamplerConfig{Source: src, Decider: d, Options: signal.DefaultOptions(), Interval: 5 * time.Second, Clock: clock})
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
