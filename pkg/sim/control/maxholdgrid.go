package control

import (
	"cmp"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// MaxHoldScores are the figures a grid of MaxHold settings weighs (total,
// shortfall, reversals) on one series at one delay and start-up:
// Scores[i][j] is the setting (Windows[i], Holds[j]).
type MaxHoldScores struct {
	Windows, Holds []int
	Scores         [][]sim.Score
}

// ScoreMaxHoldGrid runs every setting of windows x holds on s under cfg.
// On a load series the settings share most of their work: a sample's
// demand is the load over the saturation, whatever the pool it was
// measured across, so what a window asks for each turn does not depend on
// the decisions; it is computed once per window, and each hold replays
// only the hold's count and the pool. TestGridScoresAreRuns holds the
// replay to Run. A queue trace's samples carry the work the pool left, so
// there each setting is a Run of its own.
func ScoreMaxHoldGrid(cfg sim.Config, s sim.Series, windows, holds []int) MaxHoldScores {
	g := MaxHoldScores{Windows: windows, Holds: holds, Scores: make([][]sim.Score, len(windows))}
	if s.Queue != nil {
		for i, w := range windows {
			for _, h := range holds {
				g.Scores[i] = append(g.Scores[i], sim.Run(cfg, s, NewMaxHold(cfg.Model, MaxHoldOptions{Window: w, Hold: h})).Score)
			}
		}
		return g
	}
	r := newHoldReplay(cfg, s)
	want := make([]int, len(s.Load))
	for i, w := range windows {
		r.wants(max(1, w), want)
		g.Scores[i] = make([]sim.Score, len(holds))
		for j, h := range holds {
			g.Scores[i][j] = r.score(want, max(0, h))
		}
	}
	return g
}

// holdReplay is what every MaxHold setting on one load series shares: the
// sample each turn delivers, each sample's demand and each turn's
// requirement.
type holdReplay struct {
	cfg       sim.Config
	delivered []int // the sample (its turn) each turn reads
	demand    []int // each sample's demand, as MaxHold.demand reads it
	required  []int
}

func newHoldReplay(cfg sim.Config, s sim.Series) *holdReplay {
	m, n := cfg.Model, len(s.Load)
	r := &holdReplay{cfg: cfg, delivered: make([]int, n), demand: make([]int, n), required: make([]int, n)}
	c := MaxHold{model: m}
	for t, load := range s.Load {
		r.delivered[t] = max(0, t-cfg.Delay)
		r.required[t] = m.Required(load)
		// The demand is the same across any pool; one replica's reading
		// gives MaxHold's own rounding.
		r.demand[t] = c.demand(sim.Reading{Occupancy: load / m.Saturation, Replicas: 1})
	}
	return r
}

// wants fills want with what a window of w samples asks for each turn:
// the largest demand among the newest w delivered samples, clamped.
func (r *holdReplay) wants(w int, want []int) {
	for t, k := range r.delivered {
		top := 0
		for i := max(0, k-w+1); i <= k; i++ {
			top = max(top, r.demand[i])
		}
		want[t] = r.cfg.Model.Clamp(top)
	}
}

// score replays MaxHold's hold of h samples over want and the pool of
// sim.Run (replicas asked for serve after the start-up; a scale-in
// removes starting replicas first), and returns the total, the shortfall
// and the reversals.
func (r *holdReplay) score(want []int, h int) sim.Score {
	m := r.cfg.Model
	startup := r.cfg.StartupTurns
	// starting[i] counts the replicas that become ready at a turn t with
	// t % len(starting) == i; none waits longer than the start-up.
	starting := make([]int, startup+1)
	waiting := 0
	var sc sim.Score
	provisioned, lastDir, low, last := m.InitialReplicas, 0, 0, -1
	for t, w := range want {
		if startup > 0 {
			waiting -= starting[t%len(starting)]
			starting[t%len(starting)] = 0
		}
		fresh := r.delivered[t] != last
		last = r.delivered[t]
		decided := w
		if w < provisioned {
			if fresh {
				low++
			}
			if low <= h {
				decided = provisioned
			} else {
				low = 0
			}
		} else {
			low = 0
		}
		if dir := cmp.Compare(decided-provisioned, 0); dir != 0 {
			if lastDir != 0 && dir != lastDir {
				sc.Oscillation++
			}
			lastDir = dir
		}
		if startup > 0 {
			if decided > provisioned {
				starting[(t+startup)%len(starting)] += decided - provisioned
				waiting += decided - provisioned
			} else if cut := min(provisioned-decided, waiting); cut > 0 {
				// The newest start first, as sim.Run removes them.
				waiting -= cut
				for k := startup; k > 0 && cut > 0; k-- {
					i := (t + k) % len(starting)
					c := min(cut, starting[i])
					starting[i] -= c
					cut -= c
				}
			}
		}
		provisioned = decided
		sc.Total += provisioned
		if provisioned-waiting < r.required[t] {
			sc.Shortfall++
		}
	}
	return sc
}

// pick returns the grid's best setting by better, each marked as ok
// admits it; false when the grid is empty.
func (g MaxHoldScores) pick(ok func(sim.Score) bool, better func(a, b MaxHoldTuning) bool) (MaxHoldTuning, bool) {
	var best MaxHoldTuning
	found := false
	for i, w := range g.Windows {
		for j, h := range g.Holds {
			sc := g.Scores[i][j]
			cand := MaxHoldTuning{Options: MaxHoldOptions{Window: w, Hold: h}, Score: sc, WithinBudget: ok(sc)}
			if !found || better(cand, best) {
				best, found = cand, true
			}
		}
	}
	return best, found
}

// Frontier is the cheapest setting of the grid short in at most shortfall
// turns and reversing at most reversals times: what the tuned baseline
// costs for a controller's shortfall and reversals on the same series, in
// hindsight. Ties go to fewer reversals, then fewer shortfall turns, then
// the grid's order. false when no setting is that good.
func (g MaxHoldScores) Frontier(shortfall, reversals int) (MaxHoldTuning, bool) {
	t, found := g.pick(func(sc sim.Score) bool { return sc.Shortfall <= shortfall && sc.Oscillation <= reversals },
		func(a, b MaxHoldTuning) bool {
			if a.WithinBudget != b.WithinBudget {
				return a.WithinBudget
			}
			if a.Score.Total != b.Score.Total {
				return a.Score.Total < b.Score.Total
			}
			if a.Score.Oscillation != b.Score.Oscillation {
				return a.Score.Oscillation < b.Score.Oscillation
			}
			return a.Score.Shortfall < b.Score.Shortfall
		})
	return t, found && t.WithinBudget
}

// tune is TuneMaxHold's pick from the grid's figures: the cheapest setting
// short in at most budget turns (the least short when none is).
func (g MaxHoldScores) tune(budget float64) (MaxHoldTuning, bool) {
	return g.pick(func(sc sim.Score) bool { return float64(sc.Shortfall) <= budget }, MaxHoldTuning.better)
}

// DefaultFrontierGrid is the frontier's search space: windows 1..30 and
// holds 0..60, twice the tuning's, so that the frontier can hold as long
// as a controller that holds a scale-in for minutes at 15 s per turn.
func DefaultFrontierGrid() (windows, holds []int) {
	for w := 1; w <= 30; w++ {
		windows = append(windows, w)
	}
	for h := 0; h <= 60; h++ {
		holds = append(holds, h)
	}
	return windows, holds
}
