package control

import (
	"testing"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// The numbers below are the metric-delay model's printed tables
// (docs/semantics.md, "Metric delay"; testdata/reference-*.txt).

func runNaive(s sim.Series, delay int, opts NaiveOptions) sim.Score {
	m := sim.ReferenceModel()
	return sim.Run(sim.Config{Model: m, Delay: delay}, s, NewNaive(m, opts)).Score
}

func TestDelayScanGolden(t *testing.T) {
	// delay: changes, oscillation, excess, shortfall, total, peak.
	want := [][6]int{
		{14, 8, 0, 0, 301, 5},
		{63, 30, 52, 29, 319, 8},
		{67, 23, 186, 40, 422, 12},
		{59, 17, 225, 40, 457, 12},
		{56, 15, 261, 44, 489, 12},
		{53, 13, 286, 42, 515, 12},
		{43, 11, 275, 41, 510, 12},
	}
	for delay, w := range want {
		o := runNaive(sim.Reference(), delay, NaiveOptions{})
		got := [6]int{o.Changes, o.Oscillation, o.Excess, o.Shortfall, o.Total, o.Peak}
		if got != w {
			t.Errorf("delay %d: got %v, want %v", delay, got, w)
		}
	}
}

func TestDamperGolden(t *testing.T) {
	// changes, oscillation, excess, shortfall, shortfall in jump, total.
	tests := []struct {
		name  string
		delay int
		opts  NaiveOptions
		want  [6]int
	}{
		{"unadjusted", 3, NaiveOptions{}, [6]int{59, 17, 225, 40, 15, 457}},
		{"wait window 2", 3, NaiveOptions{Window: 2}, [6]int{46, 17, 257, 37, 12, 493}},
		{"wait window 3", 3, NaiveOptions{Window: 3}, [6]int{45, 15, 315, 33, 13, 552}},
		{"wait window 5", 3, NaiveOptions{Window: 5}, [6]int{40, 13, 343, 31, 9, 596}},
		{"wait window 8", 3, NaiveOptions{Window: 8}, [6]int{31, 11, 371, 23, 7, 632}},
		{"step limit 1", 3, NaiveOptions{Step: 1}, [6]int{71, 15, 98, 35, 14, 347}},
		{"step limit 2", 3, NaiveOptions{Step: 2}, [6]int{71, 15, 173, 35, 15, 410}},
		{"window 3 + step 1", 3, NaiveOptions{Window: 3, Step: 1}, [6]int{59, 13, 122, 32, 11, 385}},
		{"window 5 + step 1", 3, NaiveOptions{Window: 5, Step: 1}, [6]int{53, 11, 152, 27, 10, 417}},
		{"no delay, unadjusted", 0, NaiveOptions{}, [6]int{14, 8, 0, 0, 0, 301}},
		{"no delay, window 3 + step 1", 0, NaiveOptions{Window: 3, Step: 1}, [6]int{14, 6, 17, 0, 0, 318}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runNaive(sim.Reference(), tt.delay, tt.opts)
			got := [6]int{o.Changes, o.Oscillation, o.Excess, o.Shortfall, o.JumpShortfall, o.Total}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestJumpGolden(t *testing.T) {
	tests := []struct {
		name string
		opts NaiveOptions
		want [3]int // reaction at delays 0, 3, 6
	}{
		{"unadjusted", NaiveOptions{}, [3]int{0, 3, 6}},
		{"step limit 1", NaiveOptions{Step: 1}, [3]int{2, 5, 8}},
		{"step limit 2", NaiveOptions{Step: 2}, [3]int{1, 4, 7}},
		{"window 3 + step 1", NaiveOptions{Window: 3, Step: 1}, [3]int{2, 5, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [3]int
			for i, d := range []int{0, 3, 6} {
				got[i] = runNaive(sim.JumpTest(), d, tt.opts).Reaction
			}
			if got != tt.want {
				t.Errorf("reactions = %v, want %v", got, tt.want)
			}
		})
	}
}
