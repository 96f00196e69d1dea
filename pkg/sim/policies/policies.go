// Package policies runs pkg/policy's replica policies in the simulator's
// closed loop: the queue-pressure policy and the elasticity policies
// fully_elastic, max_count, pool_with_threshold and fixed (docs/semantics.md,
// "The queue-pressure policy" and "The elasticity policies"), each with
// its launch tracker, exactly as the engine calls them. Nothing here
// re-implements a rule; this package only maps a delivered sample to the
// policy's observation and publishes the decision's count.
//
// The wiring follows the engine's (pkg/decide): the visible replicas
// are those the sample was measured across, because KEDA tells an external
// scaler nothing about the replica count, so they are as late as the rest
// of the sample; the changes in flight (launches less removals) come from
// the tracker, whose tokens resolve when the sample's count moves; the
// decision publishes Desired, which KEDA reads with target 1. Like
// Barometer's read, no HPA tolerance or stabilization is put on top of it.
// A change shows in the sample delay + 1 turns after its decision, so only
// a launch TTL longer than that keeps its token until then.
//
// The policies' clock is the sample's time. In a steady pipeline that is
// the decision's time less a constant delay, which shifts every window, the
// cooldown and the launch TTL alike; and the first samples, which the loop
// repeats until the pipeline fills, add no elapsed time, so they read as
// one sample rather than as turns without arrivals.
//
// Each policy's inputs (sim.QueueSample, measured like the occupancy):
//
//   - queue: the arrivals counter, the completed runs and their run time,
//     the backlog (one class), and the busy replicas rounded up, as the
//     engine counts a gauge of work items. The policy is indifferent to the
//     unit of an item (a request of a load series, an item of a queue trace)
//     because it multiplies counts by the service time it measures.
//   - fully_elastic and max_count read pending work, whose unit does matter:
//     the rule asks for one replica per pending item. The engine takes pending
//     from the source's backlog gauges, so what an item is and which work
//     is counted are the source's. The simulated source counts the offered
//     work (in service or waiting) in replica-sized items, one item being
//     one replica's work for a turn at the target occupancy: ceil(offered /
//     (Saturation x Target)), which on a load series is the required-replica
//     rule without its floor. Work in service counts because the fluid
//     model has no idle-only victim choice to protect it: any replica short
//     of full is idle part of the time, so pending that left out running
//     work would let the rule remove the replicas that run it.
//   - pool_with_threshold and the idle check of every scale-down read the
//     utilization: busy over visible replicas, at most 1.
//
// Every policy's minReplicas and maxReplicas are the model's bounds, as a
// ScaledObject would set them beside minReplicaCount and maxReplicaCount;
// so max_count, which differs from fully_elastic only in an unset maximum
// (0), runs exactly as fully_elastic here.
package policies

import (
	"strconv"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
	"github.com/barometer-scaler/barometer/pkg/sim"
)

// target is the launch tracker's key: one target per run.
const target = "sim"

// Wiring is how a policy is connected to the loop.
type Wiring struct {
	Launch ledger.LaunchOptions
	// CurrentReplicas shows the policy the replicas ready at the decision,
	// as the HPA reads its pods, instead of those the sample was measured
	// across, as the engine does (a comparison, not the engine's wiring).
	CurrentReplicas bool
}

// DefaultWiring is the engine's: the default launch TTL, the sample's
// replicas.
func DefaultWiring() Wiring { return Wiring{Launch: ledger.DefaultLaunchOptions()} }

// Controller drives one policy; a fresh one serves one run.
type Controller struct {
	decide  func(r sim.Reading) policy.Decision
	tracker *ledger.LaunchTracker
	current bool
	last    policy.Decision
}

// Decide maps the delivered sample, decides at the sample's time and
// publishes the decision's count.
func (c *Controller) Decide(s sim.State) int {
	r := s.Reading
	if c.current {
		r.Replicas = s.Ready
	}
	c.last = c.decide(r)
	c.tracker.Record(target, c.last)
	return c.last.Desired
}

// Last is the latest decision, with its reason and inputs.
func (c *Controller) Last() policy.Decision { return c.last }

// Setting names a replica policy with its spec: the spec is validated and
// shared by the runs (it holds only options), each run's decider, state
// and launch tracker are its own.
func Setting(name string, spec policy.Spec, w Wiring) (sim.Setting, error) {
	if err := w.Launch.Validate(); err != nil {
		return sim.Setting{}, err
	}
	return sim.Setting{Name: name, New: func(m sim.Model) sim.Controller {
		c := &Controller{tracker: newTracker(w.Launch), current: w.CurrentReplicas}
		d := spec.New()
		c.decide = func(r sim.Reading) policy.Decision {
			obs := Observation(m, r)
			obs.InFlight = c.tracker.Observe(target, obs.Replicas, r.At)
			return d.Decide(obs, r.At)
		}
		return c
	}}, nil
}

// newTracker builds a tracker from validated options.
func newTracker(l ledger.LaunchOptions) *ledger.LaunchTracker {
	t, err := ledger.NewLaunchTracker(l)
	if err != nil {
		panic(err) // validated by Setting
	}
	return t
}

// ModelKeys are the keys a policy kind reads at model m, as a ScaledObject
// would set them beside minReplicaCount and maxReplicaCount: its bounds at
// the model's, and targetUtilization at the model's target occupancy (so
// the queue policy aims where the required replicas are counted).
func ModelKeys(k policy.Kind, m sim.Model) map[string]string {
	model := map[string]string{
		"minReplicas":       strconv.Itoa(m.MinReplicas),
		"maxReplicas":       strconv.Itoa(m.MaxReplicas),
		"targetUtilization": strconv.FormatFloat(m.Target, 'g', -1, 64),
	}
	out := map[string]string{}
	for _, info := range k.Keys() {
		if v, ok := model[info.Name]; ok {
			out[info.Name] = v
		}
	}
	return out
}

// DefaultSetting is one policy at its defaults read at model m, wired by
// w, named by the policy.
func DefaultSetting(k policy.Kind, m sim.Model, w Wiring) (sim.Setting, error) {
	spec, err := k.FromMetadata(ModelKeys(k, m))
	if err != nil {
		return sim.Setting{}, err
	}
	return Setting(k.Name, spec, w)
}

// Settings are every policy at its defaults read at model m, wired by w,
// in the order of policy.Kinds.
func Settings(m sim.Model, w Wiring) []sim.Setting {
	out := make([]sim.Setting, 0, len(policy.Kinds()))
	for _, k := range policy.Kinds() {
		s, err := DefaultSetting(k, m, w)
		if err != nil {
			panic(err) // the documented defaults are valid for any valid model
		}
		out = append(out, s)
	}
	return out
}

// Observation is a sample as the policies read it: the counters as they
// are, the backlog as one class, busy rounded up; pending the offered work
// in replica-sized items (sim.Model.Items); busy over the replicas seen.
func Observation(m sim.Model, r sim.Reading) policy.Observation {
	q := r.Queue
	return policy.Observation{
		Replicas: r.Replicas,
		Queue: policy.QueueObservation{
			Arrivals: q.Arrivals, RunSeconds: q.RunSeconds, Runs: q.Runs,
			Backlog: []policy.ClassBacklog{{Class: "default", Ready: policy.CeilCount(q.Backlog)}},
			Busy:    policy.CeilCount(q.Busy),
		},
		Pending:  Pending(m, q.Offered),
		Busy:     q.Busy,
		Answered: r.Replicas,
	}
}

// Pending is offered load in replica-sized items: the required-replica rule
// without its floor (sim.Model.Items).
func Pending(m sim.Model, offered float64) int {
	return m.Items(offered)
}
