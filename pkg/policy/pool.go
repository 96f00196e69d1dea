package policy

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// A pool is several targets that share one elasticity policy (the `pool`
// key). The pool is decided as one (docs/semantics.md, "Pools"): its
// members' signals are combined, the policy runs once, and at most one
// replica is added or removed across the whole pool per tick. The step goes
// to the member that needs it most (pickUp, pickDown).

// PoolMember is one target of a pool and its signals.
type PoolMember struct {
	Target      string
	Observation ElasticityObservation
}

// PoolDecision is a pool's decision at one tick.
type PoolDecision struct {
	// Pool is the decision on the combined signals; Before and Desired are
	// pool totals.
	Pool Decision
	// Step names the member that takes the step; empty for a no-op.
	Step string
	// Members holds one decision per member, ordered by target: the member
	// that takes the step carries the pool's action, the others a no-op.
	Members []MemberDecision
}

// MemberDecision is one member's share of a pool decision.
type MemberDecision struct {
	Target   string
	Decision Decision
}

// DecidePool decides the pool named pool at now. The options (and so the
// bounds, which bound the pool's total) are the pool's: the caller makes
// every member agree on them. A pool with no member decides a no-op.
func (p *ElasticityPolicy) DecidePool(pool string, st ElasticityState, members []PoolMember, now time.Time) (PoolDecision, ElasticityState) {
	ms := slices.SortedFunc(slices.Values(members), func(a, b PoolMember) int { return cmp.Compare(a.Target, b.Target) })
	for i := range ms {
		ms[i].Observation.Utilization = fraction(ms[i].Observation.Utilization)
	}
	if len(ms) == 0 {
		return PoolDecision{Pool: Decision{At: now, Policy: p.opts.Policy, Action: NoOp, Reason: fmt.Sprintf("pool %s has no members: no-op", pool)}}, st
	}
	sig := combine(ms)
	action, reason, inputs, next := p.decideRule(st, sig)
	inputs["members"] = float64(len(ms))
	reason += fmt.Sprintf("; pool %s of %d member(s)", pool, len(ms))
	out := PoolDecision{Pool: stepDecision(now, p.opts.Policy, action, reason, inputs, sig)}

	chosen := -1
	switch action {
	case ScaleUp:
		chosen = pickUp(ms)
	case ScaleDown:
		if chosen = pickDown(ms); chosen < 0 {
			out.Pool = out.Pool.downgrade(noIdleReplica)
		}
	}
	if chosen >= 0 {
		out.Step = ms[chosen].Target
		out.Pool.Reason += ", step on " + out.Step
	}
	for i, m := range ms {
		a := NoOp
		if i == chosen {
			a = action
		}
		d := stepDecision(now, p.opts.Policy, a, out.Pool.Reason, maps.Clone(inputs), m.Observation)
		out.Members = append(out.Members, MemberDecision{Target: m.Target, Decision: d})
	}
	return out, next
}

// combine sums the members' counts, the net change in flight included (a
// member's launches and another's removals offset). Utilization is weighted
// by replicas, so it is the pool's busy replicas over its replicas, as if
// it were one target.
func combine(ms []PoolMember) ElasticityObservation {
	var sig ElasticityObservation
	busy := 0.0
	for _, m := range ms {
		o := m.Observation
		sig.Replicas += max(o.Replicas, 0)
		// So that the pool's current is the sum of its members'.
		sig.InFlight += currentCount(o.Replicas, o.InFlight) - max(o.Replicas, 0)
		sig.Pending += max(o.Pending, 0)
		busy += o.Utilization * float64(max(o.Replicas, 0))
	}
	if sig.Replicas > 0 {
		sig.Utilization = busy / float64(sig.Replicas)
	}
	return sig
}

// pickUp chooses the member with the largest deficit (pending work not
// covered by its current count), then the busiest, then the first
// by target. With no pending work anywhere that is the smallest member, so
// a utilization-driven pool grows evenly.
func pickUp(ms []PoolMember) int {
	best := 0
	for i := 1; i < len(ms); i++ {
		a, b := ms[i].Observation, ms[best].Observation
		if c := cmp.Compare(deficit(a), deficit(b)); c > 0 || (c == 0 && a.Utilization > b.Utilization) {
			best = i
		}
	}
	return best
}

// pickDown chooses, among members with an idle replica (busy replicas are
// never removed), the one with the largest surplus, then the least busy,
// then the first by target; -1 when no member has an idle replica.
func pickDown(ms []PoolMember) int {
	best := -1
	for i, m := range ms {
		a := m.Observation
		if !hasIdle(a) {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := ms[best].Observation
		if c := cmp.Compare(-deficit(a), -deficit(b)); c > 0 || (c == 0 && a.Utilization < b.Utilization) {
			best = i
		}
	}
	return best
}

func deficit(o ElasticityObservation) int {
	return max(o.Pending, 0) - currentCount(o.Replicas, o.InFlight)
}
