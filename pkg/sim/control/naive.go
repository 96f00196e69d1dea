package control

import (
	"math"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// NaiveOptions are the naive rule's two dampers (docs/semantics.md, "Its
// dampers: wait window and step limit").
type NaiveOptions struct {
	// Window holds a scale-in until the desired count has come in low for
	// Window turns in a row; <= 1 applies it at once.
	Window int
	// Step caps the change in one turn; 0 is no limit.
	Step int
}

// Naive is the naive rule (docs/semantics.md, "The naive rule"): the
// CURRENT replica count times the delayed occupancy, over the target.
type Naive struct {
	model     sim.Model
	opts      NaiveOptions
	lowStreak int
}

// NewNaive returns the naive controller.
func NewNaive(m sim.Model, opts NaiveOptions) *Naive { return &Naive{model: m, opts: opts} }

// Decide applies the rule, then the step limit, then the wait window.
func (n *Naive) Decide(s sim.State) int {
	replicas := s.Replicas
	desired := n.model.Clamp(int(math.Ceil(float64(replicas) * s.Reading.Occupancy / n.model.Target)))
	if n.opts.Step > 0 {
		desired = min(replicas+n.opts.Step, max(replicas-n.opts.Step, desired))
	}
	if desired < replicas {
		n.lowStreak++
		if n.lowStreak < n.opts.Window {
			desired = replicas
		}
	} else {
		n.lowStreak = 0
	}
	return desired
}
