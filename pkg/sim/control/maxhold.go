package control

import (
	"fmt"
	"math"

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
	best, found := ScoreMaxHoldGrid(cfg, s, g.Windows, g.Holds).tune(g.ShortfallBudget * float64(len(s.Load)))
	if found {
		best.Score = sim.Run(cfg, s, NewMaxHold(cfg.Model, best.Options)).Score
	}
	return best
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
