package sampling

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// newFakeClock returns a manual clock at t0: Now moves only when the test
// says, and the sampler's ticker delivers only when the test ticks it.
func newFakeClock() *samplingtest.FakeClock { return samplingtest.NewFakeClock(t0) }

// scripted is a source that returns the next scripted observation or error.
type scripted struct {
	mu    sync.Mutex
	steps []func() (pressure.Observation, error)
}

func (s *scripted) Observe(context.Context) (pressure.Observation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.steps) == 0 {
		return pressure.Observation{}, errors.New("script exhausted")
	}
	next := s.steps[0]
	s.steps = s.steps[1:]
	return next()
}

func replicas(cpu ...float64) func() (pressure.Observation, error) {
	return func() (pressure.Observation, error) {
		var obs pressure.Observation
		for i, c := range cpu {
			obs.Replicas = append(obs.Replicas, pressure.ReplicaObservation{Name: string(rune('a' + i)), CPUUtilisation: c})
		}
		return obs, nil
	}
}

func fail(msg string) func() (pressure.Observation, error) {
	return func() (pressure.Observation, error) { return pressure.Observation{}, errors.New(msg) }
}

func withSplits(splits float64, err error, cpu ...float64) func() (pressure.Observation, error) {
	return func() (pressure.Observation, error) {
		obs, _ := replicas(cpu...)()
		obs.Replicas[0].HasSplits, obs.Replicas[0].SplitsInFlight = true, splits
		obs.SplitsErr = err
		return obs, nil
	}
}

// splitsUnreadable is a sample in which some footprint could not be read:
// the replica it belongs to reports none, as the sources leave it.
func splitsUnreadable(err error, cpu ...float64) func() (pressure.Observation, error) {
	return func() (pressure.Observation, error) {
		obs, _ := replicas(cpu...)()
		obs.SplitsErr = err
		return obs, nil
	}
}

func newTestSampler(t testing.TB, clock *samplingtest.FakeClock, src pressure.Source, opts signal.Options) *Sampler {
	return NewSampler(SamplerConfig{Source: src, Options: opts, Decider: pressureDecider(t, opts), Interval: 5 * time.Second, Clock: clock})
}

func TestSamplerWarmingUpThenSample(t *testing.T) {
	clock := newFakeClock()
	s := newTestSampler(t, clock, &scripted{steps: []func() (pressure.Observation, error){replicas(0.5, 0.7)}}, signal.DefaultOptions())
	first := s.Load()
	if first.Signal.Reason != signal.ReasonWarmingUp || !first.Stale(clock.Now()) {
		t.Fatalf("before the first sample: %+v", first.Signal)
	}
	snap := s.SampleOnce(context.Background())
	if snap.Signal.ScaleValue != 1.4 || snap.Signal.Reason != "resource pressure 0.70 across 2 replica(s)" {
		t.Fatalf("first sample: %v %q", snap.Signal.ScaleValue, snap.Signal.Reason)
	}
	select {
	case <-first.Next():
	default:
		t.Fatal("the old snapshot's Next channel was not closed on publish")
	}
	if s.Load() != snap || snap.Samples != 1 || snap.Failures != 0 {
		t.Fatalf("published snapshot %+v", s.Load())
	}
}

func TestSamplerFailedSampleKeepsSignal(t *testing.T) {
	clock := newFakeClock()
	s := newTestSampler(t, clock, &scripted{steps: []func() (pressure.Observation, error){
		replicas(0.5), fail("connection refused"), replicas(0.8),
	}}, signal.DefaultOptions())
	good := s.SampleOnce(context.Background())
	clock.Advance(5 * time.Second)
	bad := s.SampleOnce(context.Background())
	if bad.Signal.ScaleValue != good.Signal.ScaleValue || bad.Signal.SampledAt != good.Signal.SampledAt {
		t.Fatalf("failed sample changed the signal: %+v", bad.Signal)
	}
	if bad.LastErr == nil || bad.Failures != 1 || bad.AttemptedAt != clock.Now() {
		t.Fatalf("failure not recorded: err %v failures %d", bad.LastErr, bad.Failures)
	}
	clock.Advance(5 * time.Second)
	if next := s.SampleOnce(context.Background()); next.Signal.ScaleValue != 0.8 || next.LastErr != nil {
		t.Fatalf("recovery: %v err %v", next.Signal.ScaleValue, next.LastErr)
	}
}

func TestSamplerNoReplicasIsAFailure(t *testing.T) {
	clock := newFakeClock()
	allMissing := func() (pressure.Observation, error) {
		return pressure.Observation{Missing: []pressure.MissingReplica{{Name: "a", Err: errors.New("timeout")}}}, nil
	}
	s := newTestSampler(t, clock, &scripted{steps: []func() (pressure.Observation, error){allMissing}}, signal.DefaultOptions())
	snap := s.SampleOnce(context.Background())
	if snap.LastErr == nil || !snap.Signal.WarmingUp() {
		t.Fatalf("no replicas should fail the sample: %+v", snap)
	}
}

func TestSnapshotStaleness(t *testing.T) {
	clock := newFakeClock()
	s := newTestSampler(t, clock, &scripted{steps: []func() (pressure.Observation, error){replicas(0.5)}}, signal.DefaultOptions())
	snap := s.SampleOnce(context.Background())
	if snap.Stale(clock.Now().Add(15 * time.Second)) {
		t.Error("stale at exactly 3 intervals")
	}
	if !snap.Stale(clock.Now().Add(15*time.Second + time.Nanosecond)) {
		t.Error("not stale past 3 intervals")
	}
}

func TestSamplerSplitProbe(t *testing.T) {
	o := signal.DefaultOptions()
	o.ScaleInGateWindow = 0
	clock := newFakeClock()
	s := NewSampler(SamplerConfig{
		Options: o, Decider: pressureDecider(t, o), Interval: 5 * time.Second, Clock: clock, SplitFootprintTTL: 30 * time.Second,
		Source: &scripted{steps: []func() (pressure.Observation, error){
			replicas(1, 1),               // 2.0
			withSplits(2, nil, 0.1, 0.1), // split in flight: held
			replicas(0.1, 0.1),           // replica a silent on splits: footprint still counts
			splitsUnreadable(errors.New("probe down"), 0.1, 0.1), // fails open: not held by the split (arming tick)
			replicas(0.1, 0.1), // footprint from 5 s still within TTL: held
			replicas(0.1, 0.1), // t=40: expired: arming tick
			replicas(0.1, 0.1), // released
		}},
	})
	type want struct {
		held, split bool
	}
	wants := []want{{false, false}, {true, true}, {true, true}, {true, false}, {true, true}, {true, false}, {false, false}}
	steps := []time.Duration{0, 5, 5, 5, 5, 20, 5}
	for i, w := range wants {
		clock.Advance(steps[i] * time.Second)
		snap := s.SampleOnce(context.Background())
		if snap.Signal.Held != w.held || snap.Signal.SplitInFlight != w.split {
			t.Fatalf("sample %d: held %v split %v, want held %v split %v (%s)", i, snap.Signal.Held, snap.Signal.SplitInFlight, w.held, w.split, snap.Signal.Reason)
		}
	}
	if got := s.Load().SplitProbeFailures; got != 1 {
		t.Errorf("SplitProbeFailures = %d, want 1", got)
	}
}

// One replica's unreadable split gauge does not turn split-aware scale-in
// off for all: the footprints the others reported still hold scale-in, and
// only the unreadable part fails open. The failure is counted per sample.
func TestSamplerSplitProbeFailsOpenPerReplica(t *testing.T) {
	o := signal.DefaultOptions()
	o.ScaleInGateWindow = 0
	clock := newFakeClock()
	// Replica a is splitting; b's gauge is unreadable (it reports none).
	aSplitting := func(aSplits float64, bUnreadable bool) func() (pressure.Observation, error) {
		return func() (pressure.Observation, error) {
			obs, _ := replicas(0.1, 0.1)()
			obs.Replicas[0].HasSplits, obs.Replicas[0].SplitsInFlight = true, aSplits
			if bUnreadable {
				obs.SplitsErr = errors.New("b: barometer_splits_in_flight is NaN")
			}
			return obs, nil
		}
	}
	bSplitting := func() (pressure.Observation, error) {
		obs, _ := replicas(0.1, 0.1)()
		obs.Replicas[1].HasSplits, obs.Replicas[1].SplitsInFlight = true, 1
		return obs, nil
	}
	s := NewSampler(SamplerConfig{
		Options: o, Decider: pressureDecider(t, o), Interval: 5 * time.Second, Clock: clock, SplitFootprintTTL: time.Minute,
		Source: &scripted{steps: []func() (pressure.Observation, error){
			replicas(1, 1),      // 2.0
			aSplitting(2, true), // a's split holds, though b's gauge is unreadable
			aSplitting(0, true), // a done; b unreadable: fails open
			bSplitting,          // b splitting
			aSplitting(0, true), // b unreadable again: its earlier footprint fails open this sample
			replicas(0.1, 0.1),  // b silent, no error: its footprint (within TTL) holds again
		}},
	})
	wants := []bool{false, true, false, true, false, true}
	for i, want := range wants {
		clock.Advance(5 * time.Second)
		snap := s.SampleOnce(context.Background())
		if snap.Signal.SplitInFlight != want {
			t.Errorf("sample %d: split in flight %v, want %v (%s)", i, snap.Signal.SplitInFlight, want, snap.Signal.Reason)
		}
	}
	if got := s.Load().SplitProbeFailures; got != 3 {
		t.Errorf("SplitProbeFailures = %d, want 3", got)
	}
}

func TestSamplerRunSamplesAtOnceThenOnTicks(t *testing.T) {
	clock := newFakeClock()
	src := &scripted{steps: []func() (pressure.Observation, error){replicas(0.1), replicas(0.2), replicas(0.3)}}
	s := newTestSampler(t, clock, src, signal.DefaultOptions())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()

	waitFor := func(samples uint64) *Snapshot {
		t.Helper()
		for {
			snap := s.Load()
			if snap.Samples >= samples {
				return snap
			}
			select {
			case <-snap.Next():
			case <-time.After(5 * time.Second):
				t.Fatalf("sample %d never came", samples)
			}
		}
	}
	if got := waitFor(1); got.Signal.ScaleValue != 0.1 {
		t.Fatalf("first sample %v", got.Signal.ScaleValue)
	}
	clock.Tick(t, 5*time.Second)
	if got := waitFor(2); got.Signal.ScaleValue != 0.2 {
		t.Fatalf("second sample %v", got.Signal.ScaleValue)
	}
	cancel()
	<-done
}

func TestSamplerTimeoutBoundsObserve(t *testing.T) {
	hang := pressure.SourceFunc(func(ctx context.Context) (pressure.Observation, error) {
		<-ctx.Done()
		return pressure.Observation{}, ctx.Err()
	})
	s := NewSampler(SamplerConfig{Source: hang, Decider: pressureDecider(t, signal.DefaultOptions()), Interval: 50 * time.Millisecond})
	snap := s.SampleOnce(context.Background())
	if !errors.Is(snap.LastErr, context.DeadlineExceeded) {
		t.Fatalf("LastErr = %v, want deadline exceeded", snap.LastErr)
	}
}

// Aligned, two samplers started at different instants sample at the same
// multiples of the interval after their first sample.
func TestSamplerAlignsToTheClock(t *testing.T) {
	if got := Aligned(time.Date(2026, 1, 1, 0, 0, 3, 0, time.UTC), 5*time.Second); got != 2*time.Second {
		t.Errorf("Aligned at :03 = %v, want 2s", got)
	}
	if got := Aligned(time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC), 5*time.Second); got != 5*time.Second {
		t.Errorf("Aligned at :05 = %v, want 5s", got)
	}
	clock := samplingtest.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 3, 0, time.UTC))
	src := &scripted{steps: []func() (pressure.Observation, error){replicas(0.1), replicas(0.2), replicas(0.3)}}
	s := NewSampler(SamplerConfig{Source: src, Decider: pressureDecider(t, signal.DefaultOptions()), Interval: 5 * time.Second, Align: true, Clock: clock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	wait := func(n uint64) *Snapshot {
		t.Helper()
		for snap := s.Load(); ; snap = s.Load() {
			if snap.Samples >= n {
				return snap
			}
			select {
			case <-snap.Next():
			case <-time.After(5 * time.Second):
				t.Fatalf("sample %d never came", n)
			}
		}
	}
	wait(1)
	if at := clock.Tick(t, 2*time.Second); at.Second() != 5 {
		t.Fatalf("aligned tick at %v", at)
	}
	if snap := wait(2); snap.Signal.SampledAt.Second() != 5 {
		t.Fatalf("second sample at %v, want :05", snap.Signal.SampledAt)
	}
	clock.Tick(t, 5*time.Second)
	if snap := wait(3); snap.Signal.SampledAt.Second() != 10 {
		t.Fatalf("third sample at %v, want :10", snap.Signal.SampledAt)
	}
}

// A sampler stopped in the middle of a sample neither counts a failure nor
// warns: stopping is not the workload's fault.
func TestSamplerStoppedMidSampleIsQuiet(t *testing.T) {
	var logs strings.Builder
	started := make(chan struct{})
	hang := pressure.SourceFunc(func(ctx context.Context) (pressure.Observation, error) {
		close(started)
		<-ctx.Done()
		return pressure.Observation{}, ctx.Err()
	})
	s := NewSampler(SamplerConfig{Source: hang, Decider: pressureDecider(t, signal.DefaultOptions()), Interval: time.Minute,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	<-started
	cancel()
	<-done
	if snap := s.Load(); snap.Failures != 0 || snap.Samples != 0 || logs.Len() != 0 {
		t.Fatalf("after a stop: %d failures, %d samples, logs %q", snap.Failures, snap.Samples, logs.String())
	}
}

// An aligned sample folds at the instant it began; data measured after that
// instant keeps its real age, so a scrape's sample is stale as it is
// unaligned, and data measured before it (a Prometheus evaluation) keeps
// its own measurement time. The age the decider is handed is what the
// computer's lag counts (signal's TestLag).
func TestAlignedSampleKeepsTheDataAge(t *testing.T) {
	clock := samplingtest.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 3, 0, time.UTC))
	var measuredAt time.Time
	src := pressure.SourceFunc(func(context.Context) (pressure.Observation, error) {
		obs, _ := replicas(0.5)()
		obs.MeasuredAt = measuredAt
		if measuredAt.IsZero() {
			obs.MeasuredAt = clock.Now() // a scrape: answered now, read 20ms later
		}
		clock.Advance(20 * time.Millisecond)
		return obs, nil
	})
	opts := responsive(t)
	d := &recorder{Decider: pressureDecider(t, opts)}
	s := NewSampler(SamplerConfig{Source: src, Options: opts, Decider: d, Interval: 5 * time.Second, Align: true, Clock: clock})
	if snap := s.SampleOnce(context.Background()); snap.LastErr != nil || snap.Signal.SampledAt.Second() != 0 {
		t.Fatalf("sample folded at %v (err %v), want :00", snap.Signal.SampledAt, snap.LastErr)
	}
	if age := d.at.Sub(d.in.MeasuredAt); age != 20*time.Millisecond {
		t.Errorf("scrape measured 3s after the fold instant: age %v, want its real age 20ms", age)
	}
	clock.Advance(5 * time.Second)
	measuredAt = time.Date(2026, 1, 1, 0, 0, 4, 0, time.UTC) // evaluated 1s before the fold at :05
	s.SampleOnce(context.Background())
	if age := d.at.Sub(d.in.MeasuredAt); age != time.Second {
		t.Errorf("data measured 1s before the fold instant: age %v, want 1s", age)
	}
}
