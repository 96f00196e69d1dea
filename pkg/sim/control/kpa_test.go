package control

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// kpaTurns drives a KPA turn by turn on fresh readings of totals (in
// replicas of work, across `ready` replicas), returning each decision.
func kpaTurns(k *KPA, ready int, totals []float64) []int {
	var out []int
	for t, total := range totals {
		at := sim.Epoch.Add(time.Duration(t) * sim.DefaultTurn)
		r := sim.Reading{Turn: t, At: at, Occupancy: total / float64(ready), Replicas: ready}
		out = append(out, k.Decide(sim.State{Turn: t, Now: at, Replicas: ready, Ready: ready, Reading: r}))
	}
	return out
}

func TestKPAStableAverage(t *testing.T) {
	m := sim.ReferenceModel()
	k := NewKPA(m, DefaultKPAOptions())
	// On one pod it does not start in panic; the stable window (60 s = 4
	// turns) averages: 0.7, then (0.7 + 2) / 2 = 1.35 -> 2 pods; the
	// panic window (the newest) asks ceil(2 / 0.7) = 3 = 3 x 1 ready:
	// panic, so 3.
	got := kpaTurns(k, 1, []float64{0.7, 2})
	if got[0] != 1 || got[1] != 3 {
		t.Errorf("decisions %v, want [1 3]", got)
	}
}

func TestKPAPanicHoldsItsHighWaterMark(t *testing.T) {
	m := sim.ReferenceModel()
	k := NewKPA(m, DefaultKPAOptions())
	// 2 ready pods: it starts in panic holding 2. A surge to 7 (10 pods)
	// raises the mark; the drop after it is held for a stable window
	// (60 s) after the last turn over the threshold, then released to the
	// stable average's 2.
	totals := []float64{1.4, 7, 1.4, 1.4, 1.4, 1.4, 1.4, 1.4}
	got := kpaTurns(k, 2, totals)
	want := []int{2, 10, 10, 10, 10, 10, 2, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("decisions %v, want %v", got, want)
		}
	}
}

func TestKPAScaleDownRate(t *testing.T) {
	m := sim.ReferenceModel()
	o := DefaultKPAOptions()
	k := NewKPA(m, o)
	k.started = true // skip the start in panic
	// 8 ready pods and no demand: at most halve (max scale-down rate 2).
	if got := kpaTurns(k, 8, []float64{0}); got[0] != 4 {
		t.Errorf("got %v, want [4]", got)
	}
}

// TestKPAReadsATotal: with a stale sample the KPA multiplies nothing by the
// current count, so at delay 3 it stays far from the naive rule's spend.
func TestKPAReadsATotal(t *testing.T) {
	m := sim.ReferenceModel()
	k := sim.Run(sim.Config{Model: m, Delay: 3}, sim.Reference(), NewKPA(m, DefaultKPAOptions())).Score
	n := sim.Run(sim.Config{Model: m, Delay: 3}, sim.Reference(), NewNaive(m, NaiveOptions{})).Score
	if k.Total >= n.Total || k.Excess >= n.Excess {
		t.Errorf("kpa %+v, naive %+v", k, n)
	}
}
