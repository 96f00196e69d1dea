package decide

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// Runner is one target's signal.Decider. Its sampler calls Decide from one
// goroutine at a time, so the policy state needs no lock; the decision
// counts are read by metrics scrapes and are atomic.
type Runner struct {
	key    string
	spec   Spec
	engine *Engine
	log    *slog.Logger

	computer *signal.Computer // pressure
	prev     int              // pressure: the RecommendedReplicas published last

	tracker *policy.LaunchTracker // every policy but pressure
	queue   *policy.QueuePolicy
	qstate  policy.QueueState
	elastic *policy.ElasticityPolicy
	estate  policy.ElasticityState
	pool    *pool // nil when not pooled

	cost policy.Cost

	counts    [3]atomic.Uint64 // by actionIndex
	closeOnce sync.Once
}

// actions are the decision actions, in the order of Runner.counts.
var actions = [...]policy.Action{policy.ScaleUp, policy.ScaleDown, policy.NoOp}

func actionIndex(a policy.Action) int {
	for i, x := range actions {
		if x == a {
			return i
		}
	}
	return 2 // unreachable: policies decide only the three actions
}

// Policy is the name of the runner's policy.
func (r *Runner) Policy() string { return r.spec.Policy }

// Decisions returns how many decisions of each action the target has made,
// by action, every action present.
func (r *Runner) Decisions() map[string]uint64 {
	out := make(map[string]uint64, len(actions))
	for i, a := range actions {
		out[string(a)] = r.counts[i].Load()
	}
	return out
}

// Close leaves the runner's pool and forgets its launches and events. Call
// it once the sampler has stopped; later calls do nothing.
func (r *Runner) Close() { r.closeOnce.Do(func() { r.engine.release(r) }) }

// WarmingUp is the signal before the first sample: the computer's for
// pressure; for a policy, no replica count yet (surfaces refuse to serve a
// warming-up signal anyway).
func (r *Runner) WarmingUp() signal.ScalingSignal {
	if r.computer != nil {
		return r.computer.WarmingUp()
	}
	return signal.ScalingSignal{
		Reason:  signal.ReasonWarmingUp,
		Policy:  r.spec.Policy,
		Storage: pressure.StoragePressure{Accounts: []pressure.WalAccountPressure{}},
	}
}

// Decide folds one sample: one decision, recorded, with cost accrued over
// the replicas the source knows of.
//
// The replicas that count ("visible") are those that exist: the ones that
// answered and the ones that did not answer this time (obs.Missing). A
// missed scrape is not a replica gone: reading it as gone would make a
// no-op publish one fewer and resolve a removal that did not happen. Only
// utilization, busy over the replicas' slots, is read over the replicas
// that answered, whose queue gauges the source folded. A sample in which
// replicas were expected and none answered fails (signal.Unanswered); one
// whose source saw no replica at all is a valid sample of zero replicas,
// from which a policy can scale up.
func (r *Runner) Decide(now time.Time, obs pressure.Observation, in signal.Input) (signal.ScalingSignal, error) {
	answered := len(obs.Replicas)
	visible := answered + len(obs.Missing)
	var (
		sig      signal.ScalingSignal
		d        policy.Decision
		recorded bool // a pool records its members' decisions when it makes them
	)
	if err := signal.Unanswered(obs); err != nil {
		return sig, err
	}
	switch {
	case r.computer != nil:
		sig = r.computer.Compute(now, in) // Unanswered was checked above
		d = pressureDecision(now, r.prev, sig)
		r.prev = sig.RecommendedReplicas
	case r.queue != nil:
		if obs.Queue == nil {
			return sig, fmt.Errorf("policy queue: %w", ErrNoQueue)
		}
		inFlight := r.tracker.Observe(r.key, visible, now)
		qo := queueObservation(*obs.Queue, visible, inFlight)
		qo.ObservedAt = obs.ObservedAt // the counters' time; zero: now
		d, r.qstate = r.queue.Evaluate(r.qstate, qo, now)
		r.tracker.Record(r.key, d)
		sig = policySignal(d, in, now, false)
	default:
		if obs.Queue == nil && r.spec.Policy != policy.PolicyFixed {
			return sig, fmt.Errorf("policy %s: %w", r.spec.Policy, ErrNoQueue)
		}
		eo := elasticObservation(obs.Queue, visible, answered*max(r.spec.Elasticity.SlotsPerReplica, 1))
		if r.pool != nil {
			d, recorded = r.pool.decide(r, eo, now)
		} else {
			eo.InFlight = r.tracker.Observe(r.key, visible, now)
			d, r.estate = r.elastic.Decide(r.estate, eo, now)
			r.tracker.Record(r.key, d)
		}
		sig = policySignal(d, in, now, r.pool != nil)
	}
	r.cost = r.cost.Accrue(policy.CostOptions{PerReplicaSecond: r.spec.CostPerReplicaSecond}, visible, now)
	sig.Action = string(d.Action)
	sig.Cost = signal.Cost{ReplicaSeconds: r.cost.ReplicaSeconds, Cost: r.cost.Cost}
	if !recorded {
		r.record(d)
	}
	return sig, nil
}

// record puts a decision in the audit trail, the log and the counts. A
// no-op is logged at debug: with pressure every sample is a decision, and
// most of them change nothing.
func (r *Runner) record(d policy.Decision) {
	r.engine.audit.Record(d.Event(r.key))
	r.counts[actionIndex(d.Action)].Add(1)
	level := slog.LevelInfo
	if d.Action == policy.NoOp {
		level = slog.LevelDebug
	}
	r.log.Log(context.Background(), level, "decision", "policy", d.Policy, "action", string(d.Action),
		"before", d.Before, "after", d.Desired, "reason", d.Reason)
}

// pressureDecision reads a pressure sample as a decision: the replicas
// recommended now against those recommended by the previous sample (or the
// warming-up signal before the first).
func pressureDecision(now time.Time, before int, s signal.ScalingSignal) policy.Decision {
	a := policy.NoOp
	switch {
	case s.RecommendedReplicas > before:
		a = policy.ScaleUp
	case s.RecommendedReplicas < before:
		a = policy.ScaleDown
	}
	return policy.Decision{
		At: now, Policy: signal.PolicyPressure, Action: a, Before: before, Desired: s.RecommendedReplicas, Reason: s.Reason,
		Inputs: map[string]float64{"scale_value": s.ScaleValue, "raw_scale_value": s.RawScaleValue},
	}
}

// policySignal publishes a decision: the desired count is both the value
// KEDA reads (with target 1) and the recommendation. The compute and storage
// views ride along for operators; they do not enter the decision.
func policySignal(d policy.Decision, in signal.Input, now time.Time, pooled bool) signal.ScalingSignal {
	raw := float64(d.Desired)
	// The instantaneous demand, before step limits and one-step rules,
	// where the policy states one for this target; a pool member's inputs
	// are the pool's, whose target is the pool's total.
	if !pooled {
		for _, k := range []string{"desired", "target"} {
			if v, ok := d.Inputs[k]; ok {
				raw = v
				break
			}
		}
	}
	return signal.ScalingSignal{
		ScaleValue:          float64(d.Desired),
		RecommendedReplicas: d.Desired,
		Compute:             in.Compute,
		Storage:             in.Storage,
		Reason:              d.Reason,
		SampledAt:           now,
		RawScaleValue:       raw,
		Policy:              d.Policy,
	}
}

// queueObservation converts the source's queue to the policy's input.
func queueObservation(q pressure.QueueObservation, visible, inFlight int) policy.QueueObservation {
	out := policy.QueueObservation{
		Replicas: visible, InFlight: inFlight,
		Arrivals: q.Arrivals, RunSeconds: q.RunSeconds, Runs: q.Runs,
		Due: policy.CeilCount(q.Due), Busy: policy.CeilCount(q.Busy),
	}
	for _, b := range q.Backlog {
		out.Backlog = append(out.Backlog, policy.ClassBacklog{Class: b.Class, Ready: policy.CeilCount(b.Ready), Retrying: policy.CeilCount(b.Retrying)})
	}
	for _, r := range q.Reservations {
		out.Reservations = append(out.Reservations, policy.Reservation{Start: r.Start, End: r.End, Slots: policy.CeilCount(r.Slots)})
	}
	return out
}

// elasticObservation is 000's daemon signals from the source's queue: the
// replicas that exist, the whole backlog as pending work, and busy over the
// slots of the replicas that answered as utilization (0 when no replica
// answered or no queue is seen).
func elasticObservation(q *pressure.QueueObservation, visible, slots int) policy.ElasticityObservation {
	o := policy.ElasticityObservation{Replicas: visible}
	if q == nil {
		return o
	}
	o.Pending = policy.CeilCount(q.Pending())
	if slots > 0 {
		o.Utilization = pressure.Clamp01(q.Busy / float64(slots))
	}
	return o
}
