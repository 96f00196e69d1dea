package sampling

import (
	"context"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

func historySampler(t testing.TB, size int, steps ...func() (pressure.Observation, error)) (*Sampler, func()) {
	clock := newFakeClock()
	opts := responsive(t)
	s := NewSampler(SamplerConfig{Source: &scripted{steps: steps}, Options: opts, Decider: pressureDecider(t, opts),
		Interval: 5 * time.Second, Clock: clock, History: size})
	return s, func() { clock.Advance(5 * time.Second) }
}

// TestHistoryKeepsThePublishedSamples: every publish lands in the ring,
// failed ones flagged with the signal that stood, and once full the ring
// keeps the newest, oldest first, and what falls out of it in a bucket.
func TestHistoryKeepsThePublishedSamples(t *testing.T) {
	s, tick := historySampler(t, 3, replicas(0.5, 0.5), replicas(1, 1), fail("boom"), replicas(0.2, 0.2))
	if got := s.History(nil); len(got) != 0 {
		t.Fatalf("before any sample: %+v", got)
	}
	var want []*Snapshot
	for range 4 {
		want = append(want, s.SampleOnce(context.Background()))
		tick()
	}
	got := s.History(nil)
	if len(got) != 4 || got[0].Samples != 1 || !got[0].At.Equal(want[0].AttemptedAt) || got[0].Raw != 1 {
		t.Fatalf("kept %+v, want the first sample in a bucket and the ring's 3", got)
	}
	got = got[1:]
	for i, p := range got {
		snap := want[i+1]
		if !p.At.Equal(snap.AttemptedAt) || p.Scale != float64(float32(snap.Signal.ScaleValue)) ||
			p.Raw != float64(float32(snap.Signal.RawScaleValue)) || p.Replicas != snap.Signal.Compute.ReplicaCount {
			t.Errorf("point %d: %+v, snapshot %+v", i, p, snap.Signal)
		}
		if p.Failed != (snap.LastErr != nil) {
			t.Errorf("point %d: failed %v, error %v", i, p.Failed, snap.LastErr)
		}
	}
	if got[0].Parts&signal.PartSurge == 0 || got[0].Raw != 2 {
		t.Errorf("a saturated sample with the responsive profile's surge: %+v", got[0])
	}
	if !got[1].Failed || got[1].Scale != got[0].Scale {
		t.Errorf("a failed sample keeps the signal that stood: %+v after %+v", got[1], got[0])
	}
	if s.History(nil) == nil || len(s.History(make([]HistoryPoint, 1))) != 5 {
		t.Error("History appends to dst")
	}
}

// TestHistoryFlagsHeldAndStale: the gate holding a fall (a part of the
// reason) and a signal gone stale (failed samples past 3 x the interval)
// are marked.
func TestHistoryFlagsHeldAndStale(t *testing.T) {
	opts := signal.DefaultOptions()
	opts.ScaleInGateWindow = time.Hour
	clock := newFakeClock()
	s := NewSampler(SamplerConfig{Source: &scripted{steps: []func() (pressure.Observation, error){
		replicas(0.9, 0.9), replicas(0.1, 0.1), fail("down"), fail("down"), fail("down"), fail("down"),
	}}, Options: opts, Decider: pressureDecider(t, opts), Interval: 5 * time.Second, Clock: clock, History: 10})
	for range 6 {
		s.SampleOnce(context.Background())
		clock.Advance(5 * time.Second)
	}
	got := s.History(nil)
	if got[1].Parts&signal.PartGate == 0 {
		t.Errorf("the fall held by the gate: %+v", got[1])
	}
	if got[4].Stale || !got[5].Stale || !got[5].Failed {
		t.Errorf("stale once the signal is older than 3 x 5s: %+v %+v", got[4], got[5])
	}
}

// TestHistoryRecordAllocatesNothing: what a publish pays for the status
// page is a ring write and a bucket's fold, O(1) and allocation-free.
func TestHistoryRecordAllocatesNothing(t *testing.T) {
	h := newHistory(DefaultHistory)
	snap := &Snapshot{Signal: signal.ScalingSignal{ScaleValue: 2, Reason: "resource pressure 1.00 across 2 replica(s); saturation surge"}, AttemptedAt: t0}
	for range DefaultHistory + HistoryBuckets*BucketSamples { // the rings grow to their sizes, then only wrap
		h.record(snap)
	}
	if n := testing.AllocsPerRun(1000, func() { h.record(snap) }); n != 0 {
		t.Fatalf("record allocates %v times", n)
	}
	var none *history
	none.record(snap) // a sampler that keeps no history pays a nil check
}

// TestHistoryMemoryPerTarget states the history's memory per target: the
// points and the buckets, and the heap one history takes once full,
// measured over 1,000 of them.
func TestHistoryMemoryPerTarget(t *testing.T) {
	if size := unsafe.Sizeof(point{}); size != 24 {
		t.Errorf("a kept point is %d bytes, want 24", size)
	}
	if size := unsafe.Sizeof(bucket{}); size != 40 {
		t.Errorf("a bucket is %d bytes, want 40", size)
	}
	const targets = 1000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rings := make([]*history, targets)
	snap := &Snapshot{AttemptedAt: t0}
	for i := range rings {
		rings[i] = newHistory(DefaultHistory)
		for range DefaultHistory + HistoryBuckets*BucketSamples {
			rings[i].record(snap)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / targets
	t.Logf("history per target: %d points x %d bytes + %d buckets x %d bytes = %d bytes; measured %.0f bytes of heap per target (%d histories)",
		DefaultHistory, unsafe.Sizeof(point{}), HistoryBuckets, unsafe.Sizeof(bucket{}),
		DefaultHistory*int(unsafe.Sizeof(point{}))+HistoryBuckets*int(unsafe.Sizeof(bucket{})), per, targets)
	if per > 10<<10 {
		t.Errorf("a target's history takes %.0f bytes, want under 10 KiB", per)
	}
	runtime.KeepAlive(rings)
}

// BenchmarkSampleOnceHistory is one sample with and without the history
// kept: the difference is what the status page costs the sampling path.
func BenchmarkSampleOnceHistory(b *testing.B) {
	for _, size := range []int{0, DefaultHistory} {
		name := "off"
		if size > 0 {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			s := NewSampler(SamplerConfig{Source: constant{replicas(0.5, 0.6)}, Options: signal.DefaultOptions(),
				Decider: pressureDecider(b, signal.DefaultOptions()), Interval: 5 * time.Second, Clock: newFakeClock(), History: size})
			b.ReportAllocs()
			for b.Loop() {
				s.SampleOnce(context.Background())
			}
		})
	}
}

// constant is a source that answers the same observation every time.
type constant struct {
	obs func() (pressure.Observation, error)
}

func (c constant) Observe(context.Context) (pressure.Observation, error) { return c.obs() }

// BenchmarkHistoryRecord is the history's whole cost to one sample.
func BenchmarkHistoryRecord(b *testing.B) {
	h := newHistory(DefaultHistory)
	snap := &Snapshot{Signal: signal.ScalingSignal{ScaleValue: 2, Reason: "resource pressure 1.00 across 2 replica(s); saturation surge"}, AttemptedAt: t0}
	b.ReportAllocs()
	for b.Loop() {
		h.record(snap)
	}
}

// TestHistoryCoversAnHourAtOneSecond: at a 1 s interval the history
// reaches an hour back, the newest 2 minutes sample by sample and the rest
// in buckets that keep each stretch's lowest and highest values and every
// part of its reasons.
func TestHistoryCoversAnHourAtOneSecond(t *testing.T) {
	h := newHistory(DefaultHistory)
	const samples = 2 * 3600
	for i := range samples {
		snap := &Snapshot{AttemptedAt: t0.Add(time.Duration(i) * time.Second),
			Signal: signal.ScalingSignal{RawScaleValue: float64(i % 7), ScaleValue: float64(i % 5), Compute: pressure.ComputePressure{ReplicaCount: 1 + i%3}}}
		if i == samples-1000 {
			snap.Signal.Parts = signal.PartChurn
		}
		h.record(snap)
	}
	got := h.appendTo(nil)
	last := got[len(got)-1].At
	if span := last.Sub(got[0].At); span < time.Hour {
		t.Errorf("the history spans %s, want an hour", span)
	}
	full := 0
	churn := false
	for _, p := range got {
		if p.Samples == 1 {
			full++
			continue
		}
		if p.Samples > BucketSamples || p.Samples < 7 && p.Samples != (samples-DefaultHistory)%BucketSamples || p.Raw != 6 || p.RawMin != 0 || p.Scale != 4 || p.ScaleMin != 0 || p.Replicas != 3 || p.ReplicasMin != 1 {
			t.Fatalf("bucket %+v, want 25 samples (the newest filling) with their lowest and highest", p)
		}
		churn = churn || p.Parts&signal.PartChurn != 0
	}
	if full != DefaultHistory || !churn {
		t.Errorf("%d points at full resolution (want %d); the bucket of the held sample marked: %t", full, DefaultHistory, churn)
	}
}
