package signal

import (
	"math"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal/seasonal/seasonaltest"
)

// t0 is where the seasonal demands' days start, so the forecast tests
// can count days from it.
var t0 = seasonaltest.Start

// cp builds a compute pressure with the three dimensions across n replicas.
func cp(act, res, wal float64, n int) pressure.ComputePressure {
	return pressure.ComputePressure{Activation: act, Resource: res, WalDispatch: wal, ReplicaCount: n}
}

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func TestDominantDimensionAndClamping(t *testing.T) {
	tests := []struct {
		name      string
		in        pressure.ComputePressure
		wantDim   Dimension
		wantRaw   float64
		wantLabel string
	}{
		{"activation alone", cp(0.4, 0.1, 0, 3), Activation, 1.2, "activation pressure 0.40 across 3 replica(s)"},
		{"resource wins when greater", cp(0.2, 0.6, 0.5, 2), Resource, 1.2, "resource pressure 0.60 across 2 replica(s)"},
		{"wal-dispatch wins when greater", cp(0.2, 0.3, 0.5, 4), WalDispatch, 2, "wal-dispatch pressure 0.50 across 4 replica(s)"},
		{"tie activation-resource goes to activation", cp(0.5, 0.5, 0, 2), Activation, 1, "activation pressure 0.50 across 2 replica(s)"},
		{"tie resource-wal goes to resource", cp(0.1, 0.5, 0.5, 2), Resource, 1, "resource pressure 0.50 across 2 replica(s)"},
		{"three-way tie goes to activation", cp(0.5, 0.5, 0.5, 1), Activation, 0.5, "activation pressure 0.50 across 1 replica(s)"},
		{"NaN reads zero", cp(math.NaN(), 0.3, 0, 2), Resource, 0.6, "resource pressure 0.30 across 2 replica(s)"},
		{"negative reads zero", cp(-4, 0.3, 0, 2), Resource, 0.6, "resource pressure 0.30 across 2 replica(s)"},
		{"above one clamps to one", cp(7, 0.3, 0, 2), Activation, 2, "activation pressure 1.00 across 2 replica(s)"},
		{"+Inf clamps to one", cp(0, math.Inf(1), 0, 3), Resource, 3, "resource pressure 1.00 across 3 replica(s)"},
		{"zero replicas read as one", cp(0.5, 0, 0, 0), Activation, 0.5, "activation pressure 0.50 across 1 replica(s)"},
		{"all zero", cp(0, 0, 0, 5), Activation, 0, "activation pressure 0.00 across 5 replica(s)"},
		{"ties round away from zero", cp(0.125, 0, 0, 8), Activation, 1, "activation pressure 0.13 across 8 replica(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewComputer(DefaultOptions())
			got := c.Compute(t0, Input{Compute: tt.in})
			if got.Dominant != tt.wantDim || !near(got.RawScaleValue, tt.wantRaw) || got.Reason != tt.wantLabel {
				t.Errorf("got %v raw %v reason %q; want %v raw %v reason %q",
					got.Dominant, got.RawScaleValue, got.Reason, tt.wantDim, tt.wantRaw, tt.wantLabel)
			}
			if !near(got.ScaleValue, tt.wantRaw) {
				t.Errorf("first sample ScaleValue = %v, want raw %v", got.ScaleValue, tt.wantRaw)
			}
		})
	}
}

// step is one sample in a sequence test.
type step struct {
	at       float64 // seconds after t0
	in       Input
	want     float64 // ScaleValue
	held     bool
	allowed  bool
	recommen int
}

func runSteps(t *testing.T, opts Options, steps []step) {
	t.Helper()
	c := NewComputer(opts)
	for i, s := range steps {
		got := c.Compute(at(s.at), s.in)
		if !near(got.ScaleValue, s.want) || got.Held != s.held || got.ScaleInAllowed != s.allowed {
			t.Fatalf("step %d (t=%vs): ScaleValue %v held %v allowed %v; want %v held %v allowed %v (reason %q)",
				i, s.at, got.ScaleValue, got.Held, got.ScaleInAllowed, s.want, s.held, s.allowed, got.Reason)
		}
		if s.recommen != 0 && got.RecommendedReplicas != s.recommen {
			t.Fatalf("step %d: RecommendedReplicas %d, want %d", i, got.RecommendedReplicas, s.recommen)
		}
	}
}

func in(act float64, n int) Input { return Input{Compute: cp(act, 0, 0, n)} }

// noGate has a zero window, so only the arming tick holds.
func noGate() Options {
	o := DefaultOptions()
	o.ScaleInGateWindow = 0
	return o
}

func TestFastAttackAndSlowRelease(t *testing.T) {
	hl := DefaultEwmaHalfLife.Seconds()
	runSteps(t, noGate(), []step{
		{at: 0, in: in(0.2, 4), want: 0.8},                           // seeds
		{at: 5, in: in(0.9, 4), want: 3.6},                           // rise: snaps at once
		{at: 10, in: in(0.9, 4), want: 3.6},                          // steady counts as rising
		{at: 15, in: in(0.1, 4), want: 3.6, held: true},              // falling; this tick arms the gate
		{at: 45, in: in(0.1, 4), want: 0.4 + 3.2*0.5, allowed: true}, // one half-life later: halfway
		{at: 45 + hl, in: in(0.1, 4), want: 0.4 + 3.2*0.25, allowed: true},
		{at: 80, in: in(0.5, 4), want: 2},              // rises above the average: snaps and re-baselines
		{at: 110, in: in(0.1, 4), want: 2, held: true}, // the rise broke eligibility: re-arms
		{at: 140, in: in(0.1, 4), want: 0.4 + 1.6*0.5, allowed: true},
	})
}

func TestEwmaDecayIndependentOfCadence(t *testing.T) {
	// The same 60 s of falling load sampled every 1 s, 5 s and 20 s ends at
	// the same value: alpha depends on elapsed time, not on sample count.
	var ends []float64
	for _, cadence := range []float64{1, 5, 20} {
		c := NewComputer(noGate())
		c.Compute(at(0), in(1, 4))
		c.Compute(at(0), in(0, 4)) // arming tick, dt 0
		var got ScalingSignal
		for s := cadence; s <= 60+1e-9; s += cadence {
			got = c.Compute(at(s), in(0, 4))
		}
		ends = append(ends, got.ScaleValue)
	}
	want := 4 * math.Exp2(-60/DefaultEwmaHalfLife.Seconds())
	for i, e := range ends {
		if math.Abs(e-want) > 1e-9 {
			t.Errorf("cadence %d ended at %v, want %v", i, e, want)
		}
	}
}

func TestSmoothingOff(t *testing.T) {
	o := noGate()
	o.EwmaHalfLife = 0
	runSteps(t, o, []step{
		{at: 0, in: in(1, 2), want: 2},
		{at: 5, in: in(0.1, 2), want: 2, held: true},
		{at: 10, in: in(0.1, 2), want: 0.2, allowed: true}, // adopts the sample
	})
}

func TestScaleInGate(t *testing.T) {
	o := DefaultOptions() // window 2 min
	low := in(0.1, 4)
	runSteps(t, o, []step{
		{at: 0, in: in(0.8, 4), want: 3.2},
		{at: 10, in: low, want: 3.2, held: true},                              // arms at 10
		{at: 60, in: low, want: 3.2, held: true},                              // 50 s in
		{at: 129, in: low, want: 3.2, held: true},                             // 119 s in
		{at: 130, in: low, want: 0.4 + 2.8*math.Exp2(-1.0/30), allowed: true}, // exactly the window: releases
	})
	// A break resets the window: the re-arming tick and the window after it hold.
	runSteps(t, o, []step{
		{at: 0, in: in(0.8, 4), want: 3.2},
		{at: 10, in: low, want: 3.2, held: true},
		{at: 100, in: in(0.3, 4), want: 3.2, held: true}, // 0.3 >= 0.25: ineligible, resets
		{at: 110, in: low, want: 3.2, held: true},        // re-arms at 110
		{at: 229, in: low, want: 3.2, held: true},
		// The hold re-set the average to the held value each tick, so the
		// release decays from 3.2 over one second, not over the window.
		{at: 230, in: low, want: 0.4 + 2.8*math.Exp2(-1.0/30), allowed: true},
	})
}

func TestGateEligibility(t *testing.T) {
	// Each case is held even past the window because one precondition fails.
	tests := []struct {
		name string
		in   Input
	}{
		{"activation at threshold", Input{Compute: cp(0.25, 0, 0, 4)}},
		{"resource at threshold", Input{Compute: cp(0, 0.25, 0, 4)}},
		{"wal-dispatch at threshold", Input{Compute: cp(0, 0, 0.25, 4)}},
		{"WAL throttled", Input{Compute: pressure.ComputePressure{ReplicaCount: 4, WalSaturation: pressure.Throttled}}},
		{"split in flight", Input{Compute: cp(0, 0, 0, 4), SplitInFlight: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewComputer(noGate())
			c.Compute(at(0), in(1, 4))
			for s := 1.0; s < 600; s += 60 {
				if got := c.Compute(at(s), tt.in); !got.Held || got.ScaleValue != 4 {
					t.Fatalf("t=%v: ScaleValue %v held %v, want held at 4", s, got.ScaleValue, got.Held)
				}
			}
		})
	}
}

func TestSplitHoldNeverBlocksScaleOut(t *testing.T) {
	c := NewComputer(noGate())
	c.Compute(at(0), in(0.2, 2))
	got := c.Compute(at(5), Input{Compute: cp(0.9, 0, 0, 2), SplitInFlight: true})
	if got.ScaleValue != 1.8 || got.Held {
		t.Fatalf("scale-out during split: %v held %v, want 1.8 not held", got.ScaleValue, got.Held)
	}
	if !got.SplitInFlight {
		t.Error("SplitInFlight not reported")
	}
}

func TestSplitAwarenessOff(t *testing.T) {
	o := noGate()
	o.SplitAwareScaleIn = false
	split := Input{Compute: cp(0, 0, 0, 2), SplitInFlight: true}
	runSteps(t, o, []step{
		{at: 0, in: in(1, 2), want: 2},
		{at: 5, in: split, want: 2, held: true}, // arming tick
		{at: 10, in: split, want: 2 * math.Exp2(-5.0/30), allowed: true},
	})
}

func TestFloorAndRecommendation(t *testing.T) {
	replicasFloor := DefaultOptions()
	replicasFloor.MinReplicas = 2
	targetFloor := replicasFloor
	targetFloor.FloorTarget = 0.5

	tests := []struct {
		name      string
		opts      Options
		act       float64
		n         int
		wantScale float64
		wantRec   int
		wantHPA   int // ceil(ScaleValue / 0.5), what KEDA asks for with target 0.5
	}{
		// The first reading: the floor is MinReplicas in replica units, so
		// an HPA with target 0.5 rests at 4.
		{"original floor at rest", replicasFloor, 0.1, 2, 2, 2, 4},
		{"original floor above", replicasFloor, 0.9, 5, 4.5, 5, 9},
		// Barometer's reading: the floor is MinReplicas x target, so the
		// HPA rests at MinReplicas.
		{"target floor at rest", targetFloor, 0.1, 2, 1, 2, 2},
		{"target floor above", targetFloor, 0.9, 5, 4.5, 5, 9},
		{"no floor", DefaultOptions(), 0.1, 2, 0.2, 1, 1},
		{"recommendation is ceil", DefaultOptions(), 0.35, 4, 1.4, 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewComputer(tt.opts).Compute(t0, in(tt.act, tt.n))
			if !near(got.ScaleValue, tt.wantScale) || got.RecommendedReplicas != tt.wantRec {
				t.Fatalf("ScaleValue %v rec %d; want %v rec %d", got.ScaleValue, got.RecommendedReplicas, tt.wantScale, tt.wantRec)
			}
			if hpa := int(math.Ceil(got.ScaleValue/0.5 - 1e-9)); hpa != tt.wantHPA {
				t.Fatalf("HPA would ask for %d, want %d", hpa, tt.wantHPA)
			}
		})
	}
}

func TestFloorDoesNotFeedSmoothing(t *testing.T) {
	// The floor is applied to the published value only: the smoothed state
	// keeps tracking demand below it, so a rise from under the floor is a
	// rise, not a fall through the average.
	o := noGate()
	o.MinReplicas = 3
	runSteps(t, o, []step{
		{at: 0, in: in(0.1, 2), want: 3, recommen: 3},
		{at: 5, in: in(0.5, 2), want: 3, recommen: 3},
		{at: 10, in: in(1, 4), want: 4, recommen: 4},
	})
}

func TestReasonForms(t *testing.T) {
	c := NewComputer(DefaultOptions())
	if w := c.WarmingUp(); w.Reason != "warming up" || w.ScaleValue != 0 || !w.WarmingUp() {
		t.Errorf("warming up: %+v", w)
	}
	o := DefaultOptions()
	o.MinReplicas = 3
	if w := NewComputer(o).WarmingUp(); w.RecommendedReplicas != 3 || w.ScaleValue != 0 {
		t.Errorf("warming up with MinReplicas 3: rec %d value %v", w.RecommendedReplicas, w.ScaleValue)
	}
	if got := c.Compute(at(0), in(0.42, 3)).Reason; got != "activation pressure 0.42 across 3 replica(s)" {
		t.Errorf("plain reason %q", got)
	}
	if got := c.Compute(at(5), in(0.005, 3)).Reason; got != "activation pressure 0.01 across 3 replica(s); scale-in held by safety gate" {
		t.Errorf("held reason %q", got)
	}
	partial := cp(0.9, 0, 0, 2)
	partial.Missing = []string{"10.0.0.7:8080", "10.0.0.9:8080"}
	if got := c.Compute(at(10), Input{Compute: partial}).Reason; got != "activation pressure 0.90 across 2 replica(s); no answer from 10.0.0.7:8080, 10.0.0.9:8080" {
		t.Errorf("partial reason %q", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
