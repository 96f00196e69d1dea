package decide

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// books is the bookkeeping every decider does around its decisions: the
// audit trail, the log, the per-action counts and cost. Its sampler calls
// Decide from one goroutine at a time, so the policy state needs no lock;
// the decision counts are read by metrics scrapes and are atomic.
type books struct {
	key     string
	spec    trigger.PolicySpec
	engine  *Engine
	log     *slog.Logger
	tracker *ledger.LaunchTracker // every policy but pressure

	cost      ledger.Cost
	counts    [3]atomic.Uint64 // by actionIndex
	closeOnce sync.Once
}

// actions are the decision actions, in the order of ledger.counts.
var actions = [...]policy.Action{policy.ScaleUp, policy.ScaleDown, policy.NoOp}

func actionIndex(a policy.Action) int {
	for i, x := range actions {
		if x == a {
			return i
		}
	}
	return 2 // unreachable: policies decide only the three actions
}

func (l *books) Policy() string { return l.spec.Name }

func (l *books) Decisions() map[string]uint64 {
	out := make(map[string]uint64, len(actions))
	for i, a := range actions {
		out[string(a)] = l.counts[i].Load()
	}
	return out
}

// WarmingUp is a replica policy's signal before the first sample: no
// replica count yet (surfaces refuse to serve a warming-up signal anyway).
func (l *books) WarmingUp() signal.ScalingSignal {
	return signal.ScalingSignal{
		Reason:  signal.ReasonWarmingUp,
		Policy:  l.spec.Name,
		Storage: pressure.StoragePressure{Accounts: []pressure.WalAccountPressure{}},
	}
}

// finish accrues cost over the replicas the source knows of, puts the
// decision on the signal and records it unless a pool already did.
func (l *books) finish(sig signal.ScalingSignal, d policy.Decision, visible int, now time.Time, recorded bool) signal.ScalingSignal {
	l.cost = l.cost.Accrue(ledger.CostOptions{PerReplicaSecond: l.spec.CostPerReplicaSecond}, visible, now)
	sig.Action = string(d.Action)
	sig.Cost = signal.Cost{ReplicaSeconds: l.cost.ReplicaSeconds, Cost: l.cost.Cost}
	if !recorded {
		l.record(d)
	}
	return sig
}

// record puts a decision in the audit trail, the log and the counts. A
// no-op is logged at debug: with pressure every sample is a decision, and
// most of them change nothing.
func (l *books) record(d policy.Decision) {
	l.engine.audit.Record(ledger.EventOf(d, l.key))
	l.counts[actionIndex(d.Action)].Add(1)
	level := slog.LevelInfo
	if d.Action == policy.NoOp {
		level = slog.LevelDebug
	}
	l.log.Log(context.Background(), level, "decision", "policy", d.Policy, "action", string(d.Action),
		"before", d.Before, "after", d.Desired, "reason", d.Reason)
}

// The replicas that count ("visible") are those that exist: the ones that
// answered and the ones that did not answer this time (obs.Missing). A
// missed scrape is not a replica gone: reading it as gone would make a
// no-op publish one fewer and resolve a removal that did not happen. Only
// utilization, busy over the replicas' slots, is read over the replicas
// that answered, whose queue gauges the source folded. A sample in which
// replicas were expected and none answered fails (unanswered); one
// whose source saw no replica at all is a valid sample of zero replicas,
// from which a policy can scale up. A replica the source saw starting
// (Kubernetes discovery) exists too: counting it resolves its launch as
// soon as its pod appears, so a start slower than the launch TTL is not
// asked for twice.
func visible(obs pressure.Observation) int {
	return len(obs.Replicas) + len(obs.Missing) + len(obs.Starting)
}

// pressureDecider folds samples with the pressure computer; its decision
// compares the replicas its readers (the triggers it serves) ask for now
// with those they asked for at the previous sample.
type pressureDecider struct {
	books
	computer *signal.Computer
	readers  func() []trigger.Reader
	prev     float64 // the ScaleValue published last (the warming-up one before the first)
}

func (d *pressureDecider) WarmingUp() signal.ScalingSignal { return d.computer.WarmingUp() }

func (d *pressureDecider) Close() { d.closeOnce.Do(func() { d.engine.release(&d.books, nil) }) }

// Decide folds a sample with the computer. A sample in which no replica
// answered fails, so the previous signal stands. One whose source answered
// and saw no replica at all (scaled to zero) is valid: zero pressure across
// one replica (replicas = max(1, count)), so a workload at zero keeps a
// fresh signal instead of going stale into KEDA's fallback.
func (d *pressureDecider) Decide(now time.Time, obs pressure.Observation, in signal.Input) (signal.ScalingSignal, error) {
	if err := unanswered(obs); err != nil {
		return signal.ScalingSignal{}, err
	}
	sig := d.computer.Compute(now, in)
	dec := pressureDecision(now, d.prev, sig, d.readers())
	sig.Reason = dec.Reason
	d.prev = sig.ScaleValue
	return d.finish(sig, dec, visible(obs), now, false), nil
}

// Warm folds a past sample into the computer without deciding: the
// sampler's backfill (Warmer). The next decision compares with the
// replicas it left.
func (d *pressureDecider) Warm(now time.Time, obs pressure.Observation, in signal.Input) {
	if unanswered(obs) == nil {
		d.prev = d.computer.Compute(now, in).ScaleValue
	}
}

// replicaDecider runs a replica policy with launch tracking, alone or as
// a member of a pool.
type replicaDecider struct {
	books
	kind   policy.Kind
	policy policy.Decider
	pool   *pool // nil when not pooled
}

func (d *replicaDecider) Close() { d.closeOnce.Do(func() { d.engine.release(&d.books, d) }) }

func (d *replicaDecider) Decide(now time.Time, obs pressure.Observation, in signal.Input) (signal.ScalingSignal, error) {
	if err := unanswered(obs); err != nil {
		return signal.ScalingSignal{}, err
	}
	if obs.Queue == nil && d.kind.ReadsQueue {
		return signal.ScalingSignal{}, fmt.Errorf("policy %s: %w", d.kind.Name, ErrNoQueue)
	}
	o := policyObservation(obs)
	var (
		dec      policy.Decision
		recorded bool // a pool records its members' decisions when it makes them
	)
	if d.pool != nil {
		dec, recorded = d.pool.decide(d, o, now)
	} else {
		o.InFlight = d.tracker.Observe(d.key, o.Replicas, now)
		dec = d.policy.Decide(o, now)
		d.tracker.Record(d.key, dec)
	}
	return d.finish(policySignal(dec, in, now, d.pool != nil), dec, o.Replicas, now, recorded), nil
}

// pressureDecision reads a pressure sample as a decision: the replicas
// each reader asks for at the sample's ScaleValue against those it asked
// for at the previous one (prev). A change for any reader is the
// decision's action (a ScaleValue moves one way, so all that change agree);
// Before and Desired are the first reader's. The gate holds the pressure's
// fall, not the compensation's: a count that falls while the gate holds is
// the lead or the surge ending, and the reason says so. The inputs keep
// both values, so a surface renders the decision at its own reader
// (ledger.Event.At).
func pressureDecision(now time.Time, prev float64, s signal.ScalingSignal, readers []trigger.Reader) policy.Decision {
	a, reason := policy.NoOp, s.Reason
	for _, r := range readers {
		switch before, after := r.Replicas(prev), r.Replicas(s.ScaleValue); {
		case after > before:
			a = policy.ScaleUp
		case after < before:
			a = policy.ScaleDown
		}
	}
	if a == policy.ScaleDown && s.Held {
		reason += heldButFell
	}
	first := readers[0]
	return policy.Decision{
		At: now, Policy: signal.PolicyPressure, Action: a, Before: first.Replicas(prev), Desired: first.Replicas(s.ScaleValue), Reason: reason,
		Inputs: map[string]float64{ledger.InputScaleValue: s.ScaleValue, ledger.InputPrevScaleValue: prev, "raw_scale_value": s.RawScaleValue},
	}
}

// heldButFell explains a fall while the safety gate holds: the gate holds
// the demand, and what fell is the compensation on top of it.
const heldButFell = "; fell as the lead or surge ended (the gate holds the demand, not the compensation)"

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

// policyObservation is a sample as the replica policies read it
// (docs/semantics.md, "The elasticity policies"): the replicas that exist,
// the source's queue, the whole backlog as pending work, and busy over the
// replicas that answered (whose queue gauges the source folded). A sample
// without a queue reads as none.
func policyObservation(obs pressure.Observation) policy.Observation {
	o := policy.Observation{Replicas: visible(obs), Answered: len(obs.Replicas)}
	q := obs.Queue
	if q == nil {
		return o
	}
	o.Pending, o.Busy = policy.CeilCount(q.Pending()), q.Busy
	o.Queue = policy.QueueObservation{
		Arrivals: q.Arrivals, RunSeconds: q.RunSeconds, Runs: q.Runs,
		Due: policy.CeilCount(q.Due), Busy: policy.CeilCount(q.Busy),
		ObservedAt: obs.ObservedAt, // the counters' time; zero: now
	}
	for _, b := range q.Backlog {
		o.Queue.Backlog = append(o.Queue.Backlog, policy.ClassBacklog{Class: b.Class, Ready: policy.CeilCount(b.Ready), Retrying: policy.CeilCount(b.Retrying)})
	}
	for _, r := range q.Reservations {
		o.Queue.Reservations = append(o.Queue.Reservations, policy.Reservation{Start: r.Start, End: r.End, Slots: policy.CeilCount(r.Slots)})
	}
	return o
}

// unanswered fails an observation that expected replicas (obs.Missing)
// and got no answer from any: it has nothing to fold, and reading it as
// zero would make up a value. An observation with no replica and none
// missing is nil: the source saw a workload with no replica, a valid
// sample (the pressure computer reads it as zero pressure across one
// replica, a policy can scale up from it).
func unanswered(obs pressure.Observation) error {
	if len(obs.Replicas) > 0 || len(obs.Missing) == 0 {
		return nil
	}
	errs := make([]error, 0, len(obs.Missing)+1)
	errs = append(errs, errors.New("no replica answered"))
	for _, m := range obs.Missing {
		errs = append(errs, m.Err)
	}
	return errors.Join(errs...)
}
