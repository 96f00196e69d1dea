package sim

import "time"

// Reading is one metric sample as it reaches a controller.
type Reading struct {
	// Turn is the turn the sample was taken in; At its wall-clock time.
	Turn int
	At   time.Time
	// Occupancy is load / (Replicas x Saturation), with the work a queue
	// trace carried into the turn counted as load (Queue.Offered). It is
	// not capped: a controller that reads a saturating metric caps it itself.
	Occupancy float64
	// Replicas is the number of ready replicas the sample was measured
	// across; the pipeline carries it along with the occupancy.
	Replicas int
	// Queue is the work queue as the sample saw it.
	Queue QueueSample
}

// State is what a controller sees when it decides one turn.
type State struct {
	Turn int
	// Now is the turn's wall-clock time: Epoch + Turn x turn length.
	Now time.Time
	// Replicas is the provisioned replica count (the last decision).
	Replicas int
	// Ready is how many of them serve now.
	Ready int
	// Startup is how long a replica asked for takes to serve
	// (Config.StartupTurns turns): what a source that tells starting
	// replicas from ready ones measures (a k8s:// target's sampler).
	Startup time.Duration
	// Reading is the newest sample the pipeline has delivered.
	Reading Reading
}

// Controller decides the replica count for one turn. Controllers keep state
// across turns, so each run needs a fresh one.
type Controller interface {
	Decide(s State) int
}

// Epoch is the wall-clock time of turn 0.
var Epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Config is one run's set-up.
type Config struct {
	Model Model
	// Delay is the metric delay in turns: the decision in turn t reads the
	// sample taken in turn max(0, t - Delay).
	Delay int
	// StartupTurns is how many turns a new replica takes to become ready;
	// 0 (the metric-delay model's) serves at once.
	StartupTurns int
	// Turn is the wall-clock length of one turn (DefaultTurn when zero).
	Turn time.Duration
}

// TurnLength is the wall-clock length of one turn, DefaultTurn when Turn
// is unset.
func (c Config) TurnLength() time.Duration {
	if c.Turn <= 0 {
		return DefaultTurn
	}
	return c.Turn
}

// Step is one turn of a run.
type Step struct {
	Turn     int     `json:"turn"`
	Load     float64 `json:"load"`
	Required int     `json:"required"`
	// Replicas is the count provisioned (and paid for) after the decision.
	Replicas int `json:"replicas"`
	// Ready is the count serving after the decision.
	Ready int `json:"ready"`
	// Measured is the occupancy of the sample the decision read.
	Measured float64 `json:"measured"`
	// Backlog is the items still waiting at the end of the turn (always 0
	// on a load series, which sheds its excess).
	Backlog float64 `json:"backlog"`
}

// Result is one run: every turn and its scores.
type Result struct {
	Steps []Step `json:"steps"`
	Score Score  `json:"score"`
}

// Run drives the closed loop over a series. Each turn the sample is taken
// across the replicas ready before the decision, then the turn's work is
// served by the replicas ready after it (QueueSample describes the queue).
func Run(cfg Config, s Series, c Controller) Result {
	m, turn := cfg.Model, cfg.TurnLength()
	startup := time.Duration(cfg.StartupTurns) * turn
	provisioned := m.InitialReplicas
	var starting []int // turns at which not-yet-ready replicas serve, oldest first
	q := newFluidQueue(s, m, turn)
	readings := make([]Reading, 0, len(s.Load))
	steps := make([]Step, 0, len(s.Load))
	for t, load := range s.Load {
		starting = dropReady(starting, t)
		ready := provisioned - len(starting)
		// With nothing carried (always, on a load series) offered is load.
		offered := load + float64(q.arrive(t, load)*m.Saturation)/turn.Seconds()
		at := Epoch.Add(time.Duration(t) * turn)
		readings = append(readings, Reading{Turn: t, At: at, Occupancy: offered / (float64(ready) * m.Saturation),
			Replicas: ready, Queue: q.sample(ready, offered)})
		r := readings[max(0, t-cfg.Delay)]
		want := m.Clamp(c.Decide(State{Turn: t, Now: at, Replicas: provisioned, Ready: ready, Startup: startup, Reading: r}))
		for ; provisioned < want; provisioned++ {
			starting = append(starting, t+cfg.StartupTurns)
		}
		if cut := provisioned - want; cut > 0 {
			// Replicas still starting are removed first.
			starting = starting[:len(starting)-min(cut, len(starting))]
			provisioned = want
		}
		starting = dropReady(starting, t)
		steps = append(steps, Step{Turn: t, Load: load, Required: m.Required(load),
			Replicas: provisioned, Ready: provisioned - len(starting), Measured: r.Occupancy,
			Backlog: q.serve(provisioned - len(starting))})
	}
	res := Result{Steps: steps, Score: score(steps, s, m.InitialReplicas, turn)}
	q.waits(&res.Score)
	return res
}

func dropReady(starting []int, t int) []int {
	i := 0
	for i < len(starting) && starting[i] <= t {
		i++
	}
	return starting[i:]
}
