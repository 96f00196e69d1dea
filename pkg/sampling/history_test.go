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
// keeps the newest, oldest first.
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
	if len(got) != 3 {
		t.Fatalf("kept %d points, want the ring's 3", len(got))
	}
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
	if !got[0].Surge || got[0].Raw != 2 {
		t.Errorf("a saturated sample with the responsive profile's surge: %+v", got[0])
	}
	if !got[1].Failed || got[1].Scale != got[0].Scale {
		t.Errorf("a failed sample keeps the signal that stood: %+v after %+v", got[1], got[0])
	}
	if s.History(nil) == nil || len(s.History(make([]HistoryPoint, 1))) != 4 {
		t.Error("History appends to dst")
	}
}

// TestHistoryFlagsHeldAndStale: the gate holding a fall and a signal gone
// stale (failed samples past 3 x the interval) are marked.
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
	if !got[1].Held {
		t.Errorf("the fall held by the gate: %+v", got[1])
	}
	if got[4].Stale || !got[5].Stale || !got[5].Failed {
		t.Errorf("stale once the signal is older than 3 x 5s: %+v %+v", got[4], got[5])
	}
}

// TestHistoryRecordAllocatesNothing: what a publish pays for the status
// page is one ring write, O(1) and allocation-free.
func TestHistoryRecordAllocatesNothing(t *testing.T) {
	h := newHistory(DefaultHistory)
	snap := &Snapshot{Signal: signal.ScalingSignal{ScaleValue: 2, Reason: "resource pressure 1.00 across 2 replica(s); saturation surge"}, AttemptedAt: t0}
	for range DefaultHistory { // the ring grows to its size, then only wraps
		h.record(snap)
	}
	if n := testing.AllocsPerRun(1000, func() { h.record(snap) }); n != 0 {
		t.Fatalf("record allocates %v times", n)
	}
	var none *history
	none.record(snap) // a sampler that keeps no history pays a nil check
}

// TestHistoryMemoryPerTarget states the history's memory per target: the
// size of a point times DefaultHistory, and the heap one ring takes,
// measured over 1,000 rings.
func TestHistoryMemoryPerTarget(t *testing.T) {
	if size := unsafe.Sizeof(point{}); size != 24 {
		t.Errorf("a kept point is %d bytes, want 24", size)
	}
	const targets = 1000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rings := make([]*history, targets)
	snap := &Snapshot{AttemptedAt: t0}
	for i := range rings {
		rings[i] = newHistory(DefaultHistory)
		for range DefaultHistory {
			rings[i].record(snap)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / targets
	t.Logf("history per target: %d points x %d bytes = %d bytes; measured %.0f bytes of heap per target (%d rings)",
		DefaultHistory, unsafe.Sizeof(point{}), DefaultHistory*int(unsafe.Sizeof(point{})), per, targets)
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
