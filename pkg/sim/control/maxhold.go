package control

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// MaxHoldOptions are the tuned baseline's two settings.
type MaxHoldOptions struct {
	// Window is how many of the newest samples the count covers: it asks
	// for the largest demand among them; below 1 reads as 1.
	Window int
	// Hold is how many samples in a row must ask for fewer replicas than
	// are running before a scale-in: it happens on the (Hold+1)-th; 0
	// scales in at once.
	Hold int
}

// MaxHold is the tuned baseline of the real-traffic comparison: the
// maximum of the last Window delivered samples' demand, in replicas at
// the target occupancy, with a scale-in held until Hold samples in a row
// ask for less. A scale-out is never held.
//
// A sample's demand is its occupancy times the replicas it was measured
// across, over the target: the rate it saw, uncapped, as a request-rate
// metric reports it.
type MaxHold struct {
	model  sim.Model
	opts   MaxHoldOptions
	recent []int // the newest samples' demands, oldest first
	last   int   // the turn of the newest sample taken in; -1 before the first
	low    int   // samples in a row that asked for fewer than the running count
}

// NewMaxHold returns the tuned baseline with its settings.
func NewMaxHold(m sim.Model, o MaxHoldOptions) *MaxHold {
	o.Window = max(1, o.Window)
	o.Hold = max(0, o.Hold)
	return &MaxHold{model: m, opts: o, recent: make([]int, 0, o.Window), last: -1}
}

// Decide takes in the delivered sample (once: while the pipeline delivers
// the same sample again, nothing new is counted), then asks for the
// window's largest demand, holding a scale-in as the options say.
func (c *MaxHold) Decide(s sim.State) int {
	current := s.Replicas
	fresh := s.Reading.Turn != c.last
	if fresh {
		c.last = s.Reading.Turn
		if len(c.recent) == c.opts.Window {
			c.recent = append(c.recent[:0], c.recent[1:]...)
		}
		c.recent = append(c.recent, c.demand(s.Reading))
	}
	want := c.model.Clamp(maxOf(c.recent))
	if want >= current {
		c.low = 0
		return want
	}
	if fresh {
		c.low++
	}
	if c.low <= c.opts.Hold {
		return current
	}
	c.low = 0
	return want
}

// demand is the replicas a sample's rate needs at the target. The
// product occupancy x replicas / target recomputes load / (saturation x
// target) with rounding error, so a hair below a whole count is that
// count.
func (c *MaxHold) demand(r sim.Reading) int {
	total := r.Occupancy * float64(r.Replicas) / c.model.Target
	switch {
	case math.IsNaN(total) || total <= 0:
		return 0
	case total >= float64(c.model.MaxReplicas):
		return c.model.MaxReplicas
	}
	return int(math.Ceil(total - 1e-9))
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// MaxHoldSetting names the baseline with fixed settings.
func MaxHoldSetting(name string, o MaxHoldOptions) sim.Setting {
	return sim.Setting{Name: name, New: func(m sim.Model) sim.Controller { return NewMaxHold(m, o) }}
}

// MaxHoldGrid is the search space of the baseline's tuning and the rule
// that picks from it.
type MaxHoldGrid struct {
	Windows, Holds []int
	// ShortfallBudget is the largest fraction of turns a setting may be
	// short in and still be picked.
	ShortfallBudget float64
}

// DefaultMaxHoldGrid is windows 1..15, holds 0..30 and a shortfall budget
// of 3 % of the turns.
func DefaultMaxHoldGrid() MaxHoldGrid {
	g := MaxHoldGrid{ShortfallBudget: 0.03}
	for w := 1; w <= 15; w++ {
		g.Windows = append(g.Windows, w)
	}
	for h := 0; h <= 30; h++ {
		g.Holds = append(g.Holds, h)
	}
	return g
}

// MaxHoldTuning is the setting the grid picked and how it scored.
type MaxHoldTuning struct {
	Options MaxHoldOptions
	Score   sim.Score
	// WithinBudget says whether any setting met the shortfall budget; when
	// none did, the pick is the one short in the fewest turns.
	WithinBudget bool
}

// Setting names the picked options, e.g. "maxhold W=4 h=9".
func (t MaxHoldTuning) Setting() sim.Setting {
	return MaxHoldSetting(fmt.Sprintf("maxhold W=%d h=%d", t.Options.Window, t.Options.Hold), t.Options)
}

// TuneMaxHold runs every setting of the grid on the series at cfg's delay
// and picks, among those short in at most the budget's fraction of the
// turns, the one with the fewest total replica-turns; ties go to fewer
// reversals (Oscillation), then the smaller window, then the shorter hold.
// When no setting meets the budget it picks the fewest shortfall turns,
// then the same order.
func TuneMaxHold(cfg sim.Config, s sim.Series, g MaxHoldGrid) MaxHoldTuning {
	budget := g.ShortfallBudget * float64(len(s.Load))
	var best MaxHoldTuning
	found := false
	for _, w := range g.Windows {
		for _, h := range g.Holds {
			o := MaxHoldOptions{Window: w, Hold: h}
			sc := tuningScore(cfg, s, NewMaxHold(cfg.Model, o))
			cand := MaxHoldTuning{Options: o, Score: sc, WithinBudget: float64(sc.Shortfall) <= budget}
			if !found || cand.better(best) {
				best, found = cand, true
			}
		}
	}
	if found {
		best.Score = sim.Run(cfg, s, NewMaxHold(cfg.Model, best.Options)).Score
	}
	return best
}

// tuningScore is the figures the tuning weighs (total, shortfall,
// reversals) of one run. On a load series whose new replicas serve at
// once it is Run's loop without what the tuning does not read: a load
// series sheds its excess each turn, so a sample is the turn's load over
// the replicas ready before the decision, and nothing waits; the queue's
// sample and the record of every turn, most of Run's time, are left out,
// so the grid's hundreds of runs per series stay quick. Otherwise it is
// Run's score. TestTuningScoreIsRuns holds the two together.
func tuningScore(cfg sim.Config, s sim.Series, c sim.Controller) sim.Score {
	if s.Queue != nil || cfg.StartupTurns > 0 {
		return sim.Run(cfg, s, c).Score
	}
	m, turn := cfg.Model, cfg.TurnLength()
	recent := make([]sim.Reading, cfg.Delay+1) // the newest samples, by turn modulo their count
	sc := sim.Score{}
	provisioned, lastDir := m.InitialReplicas, 0
	for t, load := range s.Load {
		ready := provisioned
		at := sim.Epoch.Add(time.Duration(t) * turn)
		recent[t%len(recent)] = sim.Reading{Turn: t, At: at, Occupancy: load / (float64(ready) * m.Saturation), Replicas: ready}
		delivered := recent[max(0, t-cfg.Delay)%len(recent)]
		want := m.Clamp(c.Decide(sim.State{Turn: t, Now: at, Replicas: provisioned, Ready: ready, Reading: delivered}))
		if dir := cmp.Compare(want-provisioned, 0); dir != 0 {
			if lastDir != 0 && dir != lastDir {
				sc.Oscillation++
			}
			lastDir = dir
		}
		provisioned = want
		sc.Total += provisioned
		if provisioned < m.Required(load) {
			sc.Shortfall++
		}
	}
	return sc
}

// better orders candidates by the tuning rule; the grid is walked in
// ascending window then hold, so a tie on every figure keeps the earlier.
func (t MaxHoldTuning) better(than MaxHoldTuning) bool {
	if t.WithinBudget != than.WithinBudget {
		return t.WithinBudget
	}
	if !t.WithinBudget && t.Score.Shortfall != than.Score.Shortfall {
		return t.Score.Shortfall < than.Score.Shortfall
	}
	if t.Score.Total != than.Score.Total {
		return t.Score.Total < than.Score.Total
	}
	return t.Score.Oscillation < than.Score.Oscillation
}
