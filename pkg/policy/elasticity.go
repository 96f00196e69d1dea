package policy

import (
	"fmt"
	"time"
)

// Defaults of the elasticity policies (docs/semantics.md, "The elasticity
// policies").
const (
	DefaultHighThreshold  = 0.8
	DefaultLowThreshold   = 0.3
	DefaultThresholdTicks = 2
)

// ElasticityOptions tune one of the elasticity policies. Start from
// DefaultElasticityOptions, whose maximum depends on the policy.
type ElasticityOptions struct {
	// Policy is fixed, fully_elastic, max_count or pool_with_threshold. Any
	// other name decides a no-op naming it (docs/semantics.md, "fixed").
	Policy string
	// Min and Max bound the target. Max may be Unbounded. Min above Max is
	// allowed: the target formula lets Min win.
	Min, Max int
	// High and Low are pool_with_threshold's utilization thresholds, both
	// inclusive, with 0 <= Low <= High <= 1 and High > 0. High is tested
	// first, so with Low = High there is no dead band.
	High, Low float64
	// Ticks is how many consecutive ticks past a threshold trigger a step.
	Ticks int
	// SlotsPerReplica is how many work items one replica runs at once. The
	// policy reads only Utilization; the caller computes it over slots,
	// busy / (replicas x SlotsPerReplica). Pending stays one replica per
	// item (docs/semantics.md, "fully_elastic"). 0 reads as 1.
	SlotsPerReplica int
}

// DefaultElasticityOptions returns the documented defaults for a policy: no
// minimum, and no maximum except for max_count, whose maximum defaults to 0
// so that an unset maximum scales nothing up.
func DefaultElasticityOptions(policy string) ElasticityOptions {
	o := ElasticityOptions{Policy: policy, Max: Unbounded, High: DefaultHighThreshold, Low: DefaultLowThreshold, Ticks: DefaultThresholdTicks, SlotsPerReplica: 1}
	if policy == PolicyMaxCount {
		o.Max = 0
	}
	return o
}

// Validate returns an *OptionError naming the first invalid field. The
// policy name is not checked: an unknown one is a no-op by design.
func (o ElasticityOptions) Validate() error {
	return firstError(
		checkInt("Min", o.Min, 0),
		checkInt("Max", o.Max, 0),
		checkFloat("High", o.High, 0, 1, true),
		checkFloat("Low", o.Low, 0, o.High, false),
		checkInt("Ticks", o.Ticks, 1),
		checkInt("SlotsPerReplica", o.SlotsPerReplica, 0),
	)
}

// ElasticityObservation is what an elasticity policy reads at one tick.
type ElasticityObservation struct {
	// Replicas is the replicas visible now.
	Replicas int
	// InFlight is the net change not yet visible, launches less removals
	// (LaunchTracker.Observe), so it may be negative. "Current" is
	// max(Replicas + InFlight, 0).
	InFlight int
	// Pending counts work waiting for a replica.
	Pending int
	// Utilization is the fraction of the replicas' slots that are busy; 0
	// when unknown. A replica count with Utilization >= 1 has no idle
	// replica, and busy replicas are never removed. NaN and negatives read
	// as 0, anything above 1 as 1.
	Utilization float64
}

// ElasticityState is what pool_with_threshold remembers between ticks; the
// other policies keep none. The zero value is the state before any tick.
type ElasticityState struct {
	ConsecutiveAbove, ConsecutiveBelow int
}

// ElasticityPolicy decides one of the elasticity policies, one step per
// tick. It holds only validated options, so it is safe for concurrent use.
type ElasticityPolicy struct {
	opts ElasticityOptions
}

// Name is the policy's name, as decisions carry it.
func (p *ElasticityPolicy) Name() string { return p.opts.Policy }

// NewElasticityPolicy validates opts and returns the policy.
func NewElasticityPolicy(opts ElasticityOptions) (*ElasticityPolicy, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &ElasticityPolicy{opts: opts}, nil
}

// Decide decides one standalone target at now. Before is current (the
// visible replicas plus the net change in flight); a step changes that
// count by one.
func (p *ElasticityPolicy) Decide(st ElasticityState, obs ElasticityObservation, now time.Time) (Decision, ElasticityState) {
	obs.Utilization = fraction(obs.Utilization)
	action, reason, inputs, next := p.rule(st, obs)
	d := stepDecision(now, p.opts.Policy, action, reason, inputs, obs)
	if action == ScaleDown && !hasIdle(obs) {
		d = d.downgrade(noIdleReplica)
	}
	return d, next
}

const noIdleReplica = "no idle replica to remove"

// stepDecision applies one step of action to the target described by obs.
func stepDecision(now time.Time, policy string, action Action, reason string, inputs map[string]float64, obs ElasticityObservation) Decision {
	d := Decision{At: now, Policy: policy, Action: action, Reason: reason, Inputs: inputs}
	d.Before = currentCount(obs.Replicas, obs.InFlight)
	d.Desired = d.Before
	switch action {
	case ScaleUp:
		d.Desired++
	case ScaleDown:
		d.Desired--
	}
	return d
}

// fraction reads a utilization: NaN and negatives are 0, above 1 is 1.
func fraction(u float64) float64 {
	if !(u > 0) {
		return 0
	}
	return min(u, 1)
}

// hasIdle: a target can give up a replica only if one of them is idle, or
// if a launch is in flight, which a scale-down takes back first.
func hasIdle(obs ElasticityObservation) bool {
	return obs.InFlight > 0 || (obs.Replicas > 0 && obs.Utilization < 1)
}

// rule applies the policy's rule to one set of signals (a target's, or a
// pool's combined). It returns the action before any downgrade.
func (p *ElasticityPolicy) rule(st ElasticityState, sig ElasticityObservation) (Action, string, map[string]float64, ElasticityState) {
	inputs := map[string]float64{
		"replicas":    float64(sig.Replicas),
		"in_flight":   float64(sig.InFlight),
		"pending":     float64(sig.Pending),
		"utilization": sig.Utilization,
	}
	switch p.opts.Policy {
	case PolicyFixed:
		return NoOp, "fixed: no-op", inputs, st
	case PolicyFullyElastic, PolicyMaxCount:
		action, reason, target := p.elastic(sig)
		inputs["target"] = float64(target)
		return action, reason, inputs, st
	case PolicyPoolWithThreshold:
		action, reason, next := p.threshold(st, sig)
		inputs["consecutive_above"] = float64(next.ConsecutiveAbove)
		inputs["consecutive_below"] = float64(next.ConsecutiveBelow)
		return action, reason, inputs, next
	default:
		return NoOp, fmt.Sprintf("unknown policy %q", p.opts.Policy), inputs, st
	}
}

// elastic is fully_elastic and max_count, which differ only in the default
// maximum. With current = max(replicas + in_flight, 0), in_flight being
// launches less removals (see the package doc for the rule's daemon_count):
//
//	target     = max(min(pending, max), min)
//	scale_up   when target - current > 0
//	scale_down when current > target (and so > min, since target >= min)
func (p *ElasticityPolicy) elastic(sig ElasticityObservation) (Action, string, int) {
	o := p.opts
	target := max(min(sig.Pending, o.Max), o.Min)
	current := currentCount(sig.Replicas, sig.InFlight)
	head := fmt.Sprintf("%s: target %d = max(min(pending %d, max %s), min %d); %s",
		o.Policy, target, sig.Pending, BoundText(o.Max), o.Min, currentText(sig.Replicas, sig.InFlight))
	switch {
	case target > current:
		return ScaleUp, head + ", below target: scale_up", target
	case current > target:
		return ScaleDown, head + ", above target: scale_down", target
	default:
		return NoOp, head + ", at target: no-op", target
	}
}

// threshold is pool_with_threshold: utilization hysteresis over Ticks
// consecutive ticks. The acting counter resets after a step, so the next
// step needs Ticks more qualifying ticks; at a bound the counter is kept, so
// the step happens on the first tick the bound allows it. Both bounds are
// tested on current, so a change in flight either way counts.
func (p *ElasticityPolicy) threshold(st ElasticityState, sig ElasticityObservation) (Action, string, ElasticityState) {
	o := p.opts
	u := sig.Utilization
	current := currentCount(sig.Replicas, sig.InFlight)
	switch {
	case u >= o.High:
		st.ConsecutiveAbove++
		st.ConsecutiveBelow = 0
	case u <= o.Low:
		st.ConsecutiveBelow++
		st.ConsecutiveAbove = 0
	default: // the dead band
		st.ConsecutiveAbove, st.ConsecutiveBelow = 0, 0
	}
	head := fmt.Sprintf("%s: utilization %.2f", o.Policy, u)
	switch {
	case st.ConsecutiveAbove >= o.Ticks:
		head += fmt.Sprintf(" >= high %.2f for %d ticks", o.High, st.ConsecutiveAbove)
		if current >= o.Max {
			return NoOp, head + fmt.Sprintf(", at max %d (%s): no-op", o.Max, currentText(sig.Replicas, sig.InFlight)), st
		}
		st.ConsecutiveAbove = 0
		return ScaleUp, head + ": scale_up", st
	case st.ConsecutiveBelow >= o.Ticks:
		head += fmt.Sprintf(" <= low %.2f for %d ticks", o.Low, st.ConsecutiveBelow)
		if current <= o.Min {
			return NoOp, head + fmt.Sprintf(", at min %d (%s): no-op", o.Min, currentText(sig.Replicas, sig.InFlight)), st
		}
		st.ConsecutiveBelow = 0
		return ScaleDown, head + ": scale_down", st
	case st.ConsecutiveAbove > 0:
		return NoOp, head + fmt.Sprintf(" >= high %.2f for %d of %d ticks: no-op", o.High, st.ConsecutiveAbove, o.Ticks), st
	case st.ConsecutiveBelow > 0:
		return NoOp, head + fmt.Sprintf(" <= low %.2f for %d of %d ticks: no-op", o.Low, st.ConsecutiveBelow, o.Ticks), st
	default:
		return NoOp, head + fmt.Sprintf(" in the dead band (%.2f, %.2f): no-op", o.Low, o.High), st
	}
}
