package control

import (
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sim"

	"github.com/barometer-scaler/barometer/pkg/signal"
)

// drop is 8 turns needing 4 replicas, then 40 needing 1.
func drop() sim.Series {
	load := make([]float64, 48)
	for i := range load {
		load[i] = 3200
		if i >= 8 {
			load[i] = 800
		}
	}
	return sim.Series{Name: "drop", Load: load}
}

// firstAt is the first turn a run provisions n replicas, -1 if none.
func firstAt(r sim.Result, n int) int {
	for _, st := range r.Steps {
		if st.Replicas == n {
			return st.Turn
		}
	}
	return -1
}

// TestBarometerDeployments: each way of scoring Barometer says its name,
// and they differ where they should. On a drop, the raw signal of the
// responsive profile (which holds nothing) falls at once; deployed with
// the recommended behavior (no scale-down window) it falls just as soon;
// deployed with Kubernetes' default behavior the HPA holds the scale-in
// for its 300 s window (20 turns of 15 s).
func TestBarometerDeployments(t *testing.T) {
	m := sim.ReferenceModel()
	o := profile(t, signal.ProfileResponsive)
	falls := map[Deployment]int{}
	for _, d := range []Deployment{RawSignal, DeployedRecommended, DeployedDefault} {
		set := BarometerSetting("Barometer", o, d)
		if !strings.HasSuffix(set.Name, ", "+d.String()) {
			t.Errorf("%s: the name does not say %q", set.Name, d)
		}
		falls[d] = firstAt(sim.Run(sim.Config{Model: m}, drop(), set.New(m)), 1)
	}
	if falls[RawSignal] != 8 || falls[DeployedRecommended] != 8 {
		t.Errorf("raw signal falls at turn %d, deployed with the recommended behavior at %d; want both at 8", falls[RawSignal], falls[DeployedRecommended])
	}
	window := int(DefaultHPAOptions().ScaleDown.StabilizationWindow / sim.DefaultTurn)
	// The last recommendation of 4 is turn 7's; it leaves the window 300 s on.
	if falls[DeployedDefault] != 7+window {
		t.Errorf("deployed with the default behavior falls at turn %d, want %d (the 300 s window)", falls[DeployedDefault], 7+window)
	}
	if RecommendedHPAOptions().ScaleDown.StabilizationWindow != 0 || RecommendedHPAOptions().ScaleUp.Policies == nil {
		t.Errorf("recommended behavior %+v: want the default's scale-up and no scale-down window", RecommendedHPAOptions())
	}
}

// constValue publishes one value every turn.
type constValue float64

func (v constValue) Value(sim.State) float64 { return float64(v) }

// TestDeployedReadsAMilliQuantityWithinTolerance: the value travels as a
// truncated milli quantity, and the HPA moves only outside its tolerance.
func TestDeployedReadsAMilliQuantityWithinTolerance(t *testing.T) {
	m := sim.ReferenceModel()
	at := sim.Epoch.Add(time.Minute)
	tests := []struct {
		value   float64
		current int
		want    int
	}{
		{2.1, 2, 3},    // ratio 1.5: up to ceil(2.1 / 0.7)
		{1.4, 3, 2},    // ratio 0.67: down to ceil(1.4 / 0.7)
		{2.0, 3, 3},    // ratio 0.95: within the tolerance
		{0.7009, 2, 1}, // 700 milli: exactly 1 replica (ratio 0.5)
		{1.4009, 1, 2}, // 1400 milli: exactly 2
	}
	for _, tt := range tests {
		d := NewDeployed(m, constValue(tt.value), m.Target, RecommendedHPAOptions())
		got := d.Decide(sim.State{Now: at, Replicas: tt.current, Ready: tt.current})
		if got != tt.want {
			t.Errorf("value %v at %d replicas: %d, want %d", tt.value, tt.current, got, tt.want)
		}
	}
}

// TestTunedMaxHoldSettingTunesEachRun: the tuned baseline's setting runs,
// at each delay, the grid's pick for that series and delay.
func TestTunedMaxHoldSettingTunesEachRun(t *testing.T) {
	rt, s := loadRealTrace(t, "azure-llm-code-2023-11-16-15s.csv")
	cfg := sim.Config{Model: sim.PeakModel(s, 0.7, 24), Turn: rt.Step}
	g := MaxHoldGrid{Windows: []int{1, 3, 6, 12}, Holds: []int{0, 4, 16}, ShortfallBudget: 0.03}
	delays := []int{0, 3, 6}
	picks := map[MaxHoldOptions]bool{}
	for i, r := range sim.Scan(cfg, s, TunedMaxHoldSetting("maxhold, tuned", g), delays) {
		c := cfg
		c.Delay = delays[i]
		want := TuneMaxHold(c, s, g)
		picks[want.Options] = true
		if r.Score != want.Score {
			t.Errorf("delay %d: scored %+v, the pick %+v scores %+v", delays[i], r.Score, want.Options, want.Score)
		}
	}
	if len(picks) < 2 {
		t.Errorf("one pick %v at every delay: the case does not show the tuning per delay", picks)
	}
}
