package control

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// hpaRun drives an HPA turn by turn with fresh samples, applying each
// decision, and returns the replica count after every turn.
func hpaRun(opts HPAOptions, start int, occupancy []float64) []int {
	h := NewHPA(sim.ReferenceModel(), opts)
	replicas, out := start, make([]int, len(occupancy))
	for t, o := range occupancy {
		replicas = h.Decide(sim.State{Turn: t, Now: sim.Epoch.Add(time.Duration(t) * sim.DefaultTurn), Replicas: replicas,
			Ready: replicas, Reading: sim.Reading{Turn: t, Occupancy: o, Replicas: replicas}})
		out[t] = replicas
	}
	return out
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestHPAOneDecision(t *testing.T) {
	const target = 0.70
	tests := []struct {
		name      string
		start     int
		occupancy float64
		want      int
	}{
		{"inside the tolerance above", 4, target * 1.05, 4},
		{"inside the tolerance below", 4, target * 0.95, 4},
		{"outside the tolerance", 4, target * 1.2, 5},
		{"scale-up limited to 2x (more than +4)", 6, target * 10, 12},
		{"scale-up limited to +4 (more than 2x)", 1, target * 10, 5},
		{"scale-up limited to max replicas", 8, target * 10, 12},
		{"a new HPA holds a scale-down", 4, target * 0.5, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hpaRun(DefaultHPAOptions(), tt.start, []float64{tt.occupancy})[0]; got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestHPAScaleDownWindow(t *testing.T) {
	// 300 s at 15 s per turn: the start size is remembered for 20 turns.
	got := hpaRun(DefaultHPAOptions(), 4, repeat(0.35, 22))
	for turn, n := range got {
		want := 4
		if turn >= 20 {
			want = 2
		}
		if n != want {
			t.Fatalf("turn %d: %d replicas, want %d (%v)", turn, n, want, got)
		}
	}
}

func TestHPAPolicies(t *testing.T) {
	halfDown := DefaultHPAOptions()
	halfDown.ScaleDown = HPARules{Policies: []HPAPolicy{{Type: PercentPolicy, Value: 50, Period: 15 * time.Second}}}
	onePerMinute := DefaultHPAOptions()
	onePerMinute.ScaleUp.Policies = []HPAPolicy{{Type: PodsPolicy, Value: 1, Period: time.Minute}}
	disabled := DefaultHPAOptions()
	disabled.ScaleUp.Select = SelectDisabled
	minChange := DefaultHPAOptions()
	minChange.ScaleUp.Select = SelectMin

	tests := []struct {
		name      string
		opts      HPAOptions
		start     int
		occupancy []float64
		want      []int
	}{
		{"percent scale-down halves per period", halfDown, 8, repeat(0.05, 3), []int{4, 2, 1}},
		{"a pods policy counts from the period's start", onePerMinute, 4, repeat(1.4, 6), []int{5, 5, 5, 5, 6, 6}},
		{"disabled scale-up", disabled, 4, repeat(2.0, 2), []int{4, 4}},
		{"select Min takes the smaller limit", minChange, 6, repeat(7.0, 1), []int{10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hpaRun(tt.opts, tt.start, tt.occupancy)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}
