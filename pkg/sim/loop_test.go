package sim

import (
	"slices"
	"testing"
)

// script is a controller that returns fixed decisions and records what it saw.
type script struct {
	decisions []int
	seen      []State
}

func (s *script) Decide(st State) int {
	s.seen = append(s.seen, st)
	return s.decisions[st.Turn]
}

func TestRunPipelineAndStartup(t *testing.T) {
	m := ReferenceModel()
	load := Series{Name: "flat", Load: []float64{1000, 1000, 1000, 1000, 1000, 1000}}
	tests := []struct {
		name                    string
		cfg                     Config
		decisions               []int
		wantReplicas, wantReady []int
		wantReadingTurns        []int
	}{
		{"instant start, delay 2", Config{Model: m, Delay: 2}, []int{4, 4, 1, 1, 3, 3},
			[]int{4, 4, 1, 1, 3, 3}, []int{4, 4, 1, 1, 3, 3}, []int{0, 0, 0, 1, 2, 3}},
		{"two-turn start", Config{Model: m, StartupTurns: 2}, []int{4, 4, 4, 4, 4, 4},
			[]int{4, 4, 4, 4, 4, 4}, []int{2, 2, 4, 4, 4, 4}, []int{0, 1, 2, 3, 4, 5}},
		{"scale-in removes starting replicas first", Config{Model: m, StartupTurns: 3}, []int{5, 3, 3, 3, 2, 2},
			[]int{5, 3, 3, 3, 2, 2}, []int{2, 2, 2, 3, 2, 2}, []int{0, 1, 2, 3, 4, 5}},
		{"decisions are clamped to the model's bounds", Config{Model: m}, []int{0, 20, 5, 5, 5, 5},
			[]int{1, 12, 5, 5, 5, 5}, []int{1, 12, 5, 5, 5, 5}, []int{0, 1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &script{decisions: tt.decisions}
			res := Run(tt.cfg, load, c)
			var replicas, ready, readingTurns []int
			for i, st := range res.Steps {
				replicas, ready = append(replicas, st.Replicas), append(ready, st.Ready)
				readingTurns = append(readingTurns, c.seen[i].Reading.Turn)
			}
			if !slices.Equal(replicas, tt.wantReplicas) || !slices.Equal(ready, tt.wantReady) || !slices.Equal(readingTurns, tt.wantReadingTurns) {
				t.Errorf("replicas %v ready %v reading turns %v; want %v %v %v",
					replicas, ready, readingTurns, tt.wantReplicas, tt.wantReady, tt.wantReadingTurns)
			}
		})
	}
}

// TestReadingCarriesMeasuredReplicas: the sample records the ready count it
// was measured across, and the occupancy over exactly those replicas.
func TestReadingCarriesMeasuredReplicas(t *testing.T) {
	m := ReferenceModel()
	c := &script{decisions: []int{4, 4, 4}}
	Run(Config{Model: m, Delay: 1}, Series{Load: []float64{1176.47, 1176.47, 1176.47}}, c)
	r := c.seen[2].Reading // taken in turn 1, across the 4 replicas of turn 0's decision
	if r.Turn != 1 || r.Replicas != 4 || r.Occupancy != 0.25 {
		t.Errorf("reading = %+v, want turn 1 across 4 replicas at 0.25", r)
	}
	if first := c.seen[0].Reading; first.Replicas != 2 || first.Occupancy != 0.5 {
		t.Errorf("first reading = %+v, want across the 2 initial replicas at 0.5", first)
	}
}

func TestScoreSPECMetrics(t *testing.T) {
	// Required 2, 2, 3, 3 against supply 2, 3, 2, 3 (instant start).
	steps := []Step{
		{Turn: 0, Required: 2, Replicas: 2, Ready: 2},
		{Turn: 1, Required: 2, Replicas: 3, Ready: 3},
		{Turn: 2, Required: 3, Replicas: 2, Ready: 2},
		{Turn: 3, Required: 3, Replicas: 3, Ready: 3},
	}
	sc := score(steps, Series{EventStart: 2, EventEnd: 4}, 2, DefaultTurn)
	checks := []struct {
		name      string
		got, want float64
	}{
		{"changes", float64(sc.Changes), 3},
		{"oscillation", float64(sc.Oscillation), 2},
		{"excess", float64(sc.Excess), 1},
		{"shortfall", float64(sc.Shortfall), 1},
		{"jump shortfall", float64(sc.JumpShortfall), 1},
		{"total", float64(sc.Total), 10},
		{"reaction", float64(sc.Reaction), 1},
		{"theta_U", sc.UnderAccuracy, 100 * (1.0 / 3) / 4},
		{"theta_O", sc.OverAccuracy, 100 * (1.0 / 2) / 4},
		{"tau_U", sc.UnderTimeshare, 25},
		{"tau_O", sc.OverTimeshare, 25},
		// Steps: supply +,-,+ against demand 0,+,0: all three disagree.
		{"upsilon", sc.Instability, 100},
		// 3 adaptations - 1 demand change over 4 turns of 15 s (1 minute).
		{"jitter", sc.Jitter, 2},
	}
	for _, c := range checks {
		if diff := c.got - c.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}
