package control

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sim"

	"github.com/barometer-scaler/barometer/pkg/signal"
)

func profile(t *testing.T, name string) BarometerOptions {
	t.Helper()
	o, err := ProfileBarometerOptions(name)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// decideOnce asks a fresh Barometer for one decision at turn `turn` on a
// sample taken at turn `taken`.
func decideOnce(o BarometerOptions, turn, taken, current int, r sim.Reading) int {
	r.Turn, r.At = taken, sim.Epoch.Add(time.Duration(taken)*sim.DefaultTurn)
	return NewBarometer(sim.ReferenceModel(), o).Decide(sim.State{Turn: turn, Now: sim.Epoch.Add(time.Duration(turn) * sim.DefaultTurn),
		Replicas: current, Ready: current, Reading: r})
}

func TestBarometerOneDecision(t *testing.T) {
	follow := profile(t, signal.ProfileResponsive)
	follow.Signal.SaturationSurge = false
	surge := profile(t, signal.ProfileResponsive)
	tests := []struct {
		name    string
		opts    BarometerOptions
		turn    int
		current int
		r       sim.Reading
		want    int
	}{
		// 0.5 across 4 replicas is 2 replicas of work: ceil(2 / 0.7) = 3,
		// whatever the current count (the naive rule would ask 8 x 0.5 / 0.7).
		{"demand is measured across the sample's replicas", follow, 3, 8, sim.Reading{Occupancy: 0.5, Replicas: 4}, 3},
		{"the collector caps a saturated replica at 1", follow, 0, 2, sim.Reading{Occupancy: 2, Replicas: 2}, 3},
		{"a fresh saturated sample doubles", surge, 0, 2, sim.Reading{Occupancy: 2, Replicas: 2}, 4},
		{"a stale saturated sample adds 4 when that is more", surge, 3, 2, sim.Reading{Occupancy: 2, Replicas: 2}, 6},
		{"a stale saturated sample doubles when that is more", surge, 3, 6, sim.Reading{Occupancy: 2, Replicas: 6}, 12},
		{"an unsaturated sample is read as is", surge, 3, 2, sim.Reading{Occupancy: 0.9, Replicas: 2}, 3},
		{"a KEDA target of 0.5 asks for more", BarometerOptions{Signal: follow.Signal, Target: 0.5}, 0, 2, sim.Reading{Occupancy: 0.6, Replicas: 2}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideOnce(tt.opts, tt.turn, 0, tt.current, tt.r); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// TestBarometerOriginalHoldsScaleIn: the original profile's resource
// threshold (0.25) keeps a busy cluster from scaling in.
func TestBarometerOriginalHoldsScaleIn(t *testing.T) {
	b := NewBarometer(sim.ReferenceModel(), profile(t, signal.ProfileOriginal))
	replicas := 4
	for turn, occ := range []float64{0.7, 0.35, 0.35, 0.35, 0.35, 0.35, 0.35, 0.35, 0.35, 0.35, 0.35} {
		at := sim.Epoch.Add(time.Duration(turn) * sim.DefaultTurn)
		replicas = b.Decide(sim.State{Turn: turn, Now: at, Replicas: replicas, Ready: replicas,
			Reading: sim.Reading{Turn: turn, At: at, Occupancy: occ, Replicas: replicas}})
		if replicas != 4 {
			t.Fatalf("turn %d: %d replicas, want 4 (held)", turn, replicas)
		}
	}
}

// TestOriginalProfileKeepsItsFigures pins the original profile to the
// figures the signal had before the profiles: the report's former
// "default options" row, at delays 0, 3 and 6, and its jump test.
func TestOriginalProfileKeepsItsFigures(t *testing.T) {
	m := sim.ReferenceModel()
	set := BarometerSetting("original", profile(t, signal.ProfileOriginal), RawSignal)
	want := map[int][4]int{0: {397, 0, 4, 96}, 3: {398, 17, 3, 114}, 6: {400, 28, 3, 127}}
	jump := map[int]int{0: 2, 3: 11, 6: 20}
	for d, w := range want {
		o := sim.Run(sim.Config{Model: m, Delay: d}, sim.Reference(), set.New(m)).Score
		if got := [4]int{o.Total, o.Shortfall, o.Oscillation, o.Excess}; got != w {
			t.Errorf("delay %d: total/shortfall/oscillation/excess %v, want %v", d, got, w)
		}
		if r := sim.Run(sim.Config{Model: m, Delay: d}, sim.JumpTest(), set.New(m)).Score.Reaction; r != jump[d] {
			t.Errorf("delay %d: jump reaction %d, want %d", d, r, jump[d])
		}
	}
}

// TestResponsiveProfileFigures pins the responsive profile's raw signal
// to the figures it was chosen on: delay 3 on the reference series (total
// <= 331 and oscillation <= 8 met when chosen; 332 since the lead's trend
// leaves saturated samples out; shortfall 11, the goal's 8 missed:
// docs/compensation.md says why), and delay 0, not worse than the naive
// rule.
func TestResponsiveProfileFigures(t *testing.T) {
	m := sim.ReferenceModel()
	resp := BarometerSetting("responsive", profile(t, signal.ProfileResponsive), RawSignal)
	d3 := sim.Run(sim.Config{Model: m, Delay: 3}, sim.Reference(), resp.New(m)).Score
	if d3.Total != 332 || d3.Shortfall != 11 || d3.Oscillation != 8 {
		t.Errorf("delay 3: total %d, shortfall %d, oscillation %d; want 332, 11, 8", d3.Total, d3.Shortfall, d3.Oscillation)
	}
	z := sim.Run(sim.Config{Model: m}, sim.Reference(), resp.New(m)).Score
	n := sim.Run(sim.Config{Model: m}, sim.Reference(), NewNaive(m, NaiveOptions{})).Score
	if z.Total > n.Total || z.Shortfall > n.Shortfall || z.Oscillation > n.Oscillation || z.Excess > n.Excess {
		t.Errorf("delay 0: responsive %+v, naive %+v", z, n)
	}
}

// TestBudgetedProfileFigures pins the figures the report states for the
// default profile as deployed (KEDA and the HPA with the recommended
// behavior) on the reference series at delay 3: it buys its shortfall of
// 2 turns with headroom (total 525, the ideal 301) and reverses 3 times;
// and the jump test's reaction, at most 3 turns at delay 3.
func TestBudgetedProfileFigures(t *testing.T) {
	m := sim.ReferenceModel()
	def := BarometerSetting("budgeted", profile(t, signal.ProfileBudgeted), DeployedRecommended)
	d3 := sim.Run(sim.Config{Model: m, Delay: 3}, sim.Reference(), def.New(m)).Score
	if d3.Total != 525 || d3.Shortfall != 2 || d3.Oscillation != 3 {
		t.Errorf("delay 3: total %d, shortfall %d, oscillation %d; want 525, 2, 3", d3.Total, d3.Shortfall, d3.Oscillation)
	}
	if r := sim.Run(sim.Config{Model: m, Delay: 3}, sim.JumpTest(), def.New(m)).Score.Reaction; r < 0 || r > 3 {
		t.Errorf("jump test at delay 3: reaction %d, want at most 3", r)
	}
}

// TestDefaultProfileNeverSlowerToAJump: at every delay the default
// profile reaches a jump's requirement no later than `original`, and no
// later than the naive rule's delay.
func TestDefaultProfileNeverSlowerToAJump(t *testing.T) {
	m := sim.ReferenceModel()
	orig := BarometerSetting("original", profile(t, signal.ProfileOriginal), RawSignal)
	for _, dep := range []Deployment{RawSignal, DeployedRecommended} {
		def := BarometerSetting("default", profile(t, signal.DefaultProfile), dep)
		for d := range 7 {
			c := sim.Config{Model: m, Delay: d}
			got, was := sim.Run(c, sim.JumpTest(), def.New(m)).Score.Reaction, sim.Run(c, sim.JumpTest(), orig.New(m)).Score.Reaction
			if got < 0 || got > was || got > max(d, 1) {
				t.Errorf("%s, delay %d: reaction %d, original %d", def.Name, d, got, was)
			}
		}
	}
}

// oneSpike is a quiet series (2 replicas at target) with one turn whose
// sample saturates the pool.
func oneSpike() sim.Series {
	load := make([]float64, 40)
	for i := range load {
		load[i] = 1000
	}
	load[10] = 5000
	return sim.Series{Name: "one spike", Load: load}
}

// TestSurgeDoesNotRatchet: one saturated sample in a quiet series raises
// the responsive profile's pool once; the next sample that is not
// saturated ends the surge, and the pool comes back instead of climbing to
// its maximum.
func TestSurgeDoesNotRatchet(t *testing.T) {
	m := sim.ReferenceModel()
	for _, d := range []int{0, 3} {
		res := sim.Run(sim.Config{Model: m, Delay: d}, oneSpike(), BarometerSetting("responsive", profile(t, signal.ProfileResponsive), RawSignal).New(m))
		if res.Score.Peak >= m.MaxReplicas {
			t.Errorf("delay %d: peak %d, the surge ratcheted to the maximum", d, res.Score.Peak)
		}
		if last := res.Steps[len(res.Steps)-1].Replicas; last != 2 {
			t.Errorf("delay %d: ends at %d replicas, want 2", d, last)
		}
	}
}

// TestBudgetedSurgeIsNotHeld: under the budgeted profile, as deployed,
// the surge of one saturated sample does not ratchet, and the churn budget
// does not hold it: the churn budget holds what the demand asked for, so
// the pool leaves the surge's peak with the first sample that is not
// saturated, and ends at the quiet level plus at most one replica of
// headroom (the spike's short samples raised the headroom).
func TestBudgetedSurgeIsNotHeld(t *testing.T) {
	m := sim.ReferenceModel()
	set := BarometerSetting("budgeted", profile(t, signal.ProfileBudgeted), DeployedRecommended)
	hold := int(signal.DefaultScaleInHold / sim.DefaultTurn)
	for _, d := range []int{0, 3} {
		res := sim.Run(sim.Config{Model: m, Delay: d}, oneSpike(), set.New(m))
		if res.Score.Peak >= m.MaxReplicas {
			t.Errorf("delay %d: peak %d, the surge ratcheted to the maximum", d, res.Score.Peak)
		}
		// The spike's sample arrives in turn 10 + d; the next sample is
		// not saturated, and the surge ends there, hold or none.
		if got := res.Steps[10+d+hold-1].Replicas; got >= res.Score.Peak {
			t.Errorf("delay %d: %d replicas %d turns after the spike, the surge's peak %d held", d, got, hold-1, res.Score.Peak)
		}
		if last := res.Steps[len(res.Steps)-1].Replicas; last >= res.Score.Peak || last > 3 {
			t.Errorf("delay %d: ends at %d replicas (peak %d), want back to at most 3", d, last, res.Score.Peak)
		}
	}
}
