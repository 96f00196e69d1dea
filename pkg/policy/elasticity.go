package policy

import (
	"fmt"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
)

// Defaults of the elasticity policies (docs/semantics.md, "The elasticity
// policies").
const (
	DefaultHighThreshold  = 0.8
	DefaultLowThreshold   = 0.3
	DefaultThresholdTicks = 2
)

// ElasticityOptions tune one of the elasticity policies; each kind's
// defaults are its starting value.
type ElasticityOptions struct {
	// Policy is the policy's name, as its decisions carry it.
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

// The elasticity policies: each its rule, its keys and its default maximum
// (docs/semantics.md, "The elasticity policies").
var (
	Fixed = elasticityKind(PolicyFixed, "holds the replica count it sees", fixedRule, Unbounded, false, false)
	// FullyElastic and MaxCount differ only in the default maximum.
	FullyElastic      = elasticityKind(PolicyFullyElastic, "one replica per pending item, within the bounds", elasticRule, Unbounded, true, false)
	MaxCount          = elasticityKind(PolicyMaxCount, "fully_elastic with no replicas unless maxReplicas is set", elasticRule, 0, true, false)
	PoolWithThreshold = elasticityKind(PolicyPoolWithThreshold, "a step when utilization stays past a threshold", thresholdRule, Unbounded, true, true)
)

// elasticityKind declares an elasticity policy deciding by rule. bounded
// policies read the replica bounds and slots (and the work queue);
// thresholds ones the utilization thresholds.
func elasticityKind(name, doc string, rule elasticityRule, max int, bounded, thresholds bool) Kind {
	zero := func() ElasticityOptions {
		return ElasticityOptions{Policy: name, Max: max, High: DefaultHighThreshold, Low: DefaultLowThreshold, Ticks: DefaultThresholdTicks, SlotsPerReplica: 1}
	}
	var keys []keyschema.Key[ElasticityOptions]
	var checks []keyschema.Check[ElasticityOptions]
	if bounded {
		keys = append(keys,
			minReplicasKey(func(o *ElasticityOptions) *int { return &o.Min }),
			maxReplicasKey(func(o *ElasticityOptions) *int { return &o.Max }, max),
			slotsPerReplicaKey(func(o *ElasticityOptions) *int { return &o.SlotsPerReplica }))
	}
	if thresholds {
		keys = append(keys, thresholdKeys()...)
		checks = append(checks, checkThresholds)
	}
	return newKind(Kind{Name: name, Doc: doc, ReadsQueue: bounded, Poolable: true}, zero, keys, checks,
		func(o ElasticityOptions) (Spec, error) {
			p, err := newElasticityPolicy(o, rule)
			if err != nil {
				return nil, err
			}
			return elasticSpec{p}, nil
		})
}

func thresholdKeys() []keyschema.Key[ElasticityOptions] {
	return []keyschema.Key[ElasticityOptions]{
		keyschema.Float("threshold", func(o *ElasticityOptions) *float64 { return &o.High }, DefaultHighThreshold, keyschema.AboveUpTo(0, 1)).InSimulator().
			Describe("high utilization threshold"),
		keyschema.Float("thresholdLow", func(o *ElasticityOptions) *float64 { return &o.Low }, DefaultLowThreshold, keyschema.Between(0, 1)).InSimulator().
			Describe("low utilization threshold, at most `threshold`"),
		keyschema.Int("ticks", func(o *ElasticityOptions) *int { return &o.Ticks }, DefaultThresholdTicks, 1, 1000).InSimulator().
			Describe("consecutive ticks past a threshold before a step"),
	}
}

// checkThresholds refuses a low threshold above the high one.
func checkThresholds(o *ElasticityOptions, _ *keyschema.Context, _ func(string) bool) error {
	if o.Low > o.High {
		return &keyschema.MetadataError{Key: "thresholdLow", Value: keyschema.FormatFloat(o.Low), Allowed: keyschema.Between(0, o.High).String()}
	}
	return nil
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
	rule elasticityRule
}

// elasticityRule is one policy's rule over one set of signals (a target's,
// or a pool's combined): the action before any downgrade, the reason, the
// inputs it adds and the next state.
type elasticityRule func(p *ElasticityPolicy, st ElasticityState, sig ElasticityObservation, inputs map[string]float64) (Action, string, ElasticityState)

// Name is the policy's name, as decisions carry it.
func (p *ElasticityPolicy) Name() string { return p.opts.Policy }

// newElasticityPolicy validates opts and returns the policy deciding by rule.
func newElasticityPolicy(opts ElasticityOptions, rule elasticityRule) (*ElasticityPolicy, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &ElasticityPolicy{opts: opts, rule: rule}, nil
}

// Decide decides one standalone target at now. Before is current (the
// visible replicas plus the net change in flight); a step changes that
// count by one.
func (p *ElasticityPolicy) Decide(st ElasticityState, obs ElasticityObservation, now time.Time) (Decision, ElasticityState) {
	obs.Utilization = fraction(obs.Utilization)
	action, reason, inputs, next := p.decideRule(st, obs)
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

// decideRule applies the policy's rule to one set of signals.
func (p *ElasticityPolicy) decideRule(st ElasticityState, sig ElasticityObservation) (Action, string, map[string]float64, ElasticityState) {
	inputs := map[string]float64{
		"replicas":    float64(sig.Replicas),
		"in_flight":   float64(sig.InFlight),
		"pending":     float64(sig.Pending),
		"utilization": sig.Utilization,
	}
	action, reason, next := p.rule(p, st, sig, inputs)
	return action, reason, inputs, next
}

func fixedRule(p *ElasticityPolicy, st ElasticityState, _ ElasticityObservation, _ map[string]float64) (Action, string, ElasticityState) {
	return NoOp, p.opts.Policy + ": no-op", st
}

func elasticRule(p *ElasticityPolicy, st ElasticityState, sig ElasticityObservation, inputs map[string]float64) (Action, string, ElasticityState) {
	action, reason, target := p.elastic(sig)
	inputs["target"] = float64(target)
	return action, reason, st
}

func thresholdRule(p *ElasticityPolicy, st ElasticityState, sig ElasticityObservation, inputs map[string]float64) (Action, string, ElasticityState) {
	action, reason, next := p.threshold(st, sig)
	inputs["consecutive_above"] = float64(next.ConsecutiveAbove)
	inputs["consecutive_below"] = float64(next.ConsecutiveBelow)
	return action, reason, next
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

// observe reads a sample as the elasticity policies do: utilization over
// the slots of the replicas whose queue was read.
func (p *ElasticityPolicy) observe(o Observation) ElasticityObservation {
	e := ElasticityObservation{Replicas: o.Replicas, InFlight: o.InFlight, Pending: o.Pending}
	if slots := o.Answered * max(p.opts.SlotsPerReplica, 1); slots > 0 {
		e.Utilization = o.Busy / float64(slots)
	}
	return e
}

// elasticSpec decides with an elasticity policy, alone or in a pool.
type elasticSpec struct{ p *ElasticityPolicy }

func (s elasticSpec) New() Decider { return &elasticDecider{p: s.p} }

func (s elasticSpec) NewPool() (PoolDecider, bool) { return &elasticPool{p: s.p}, true }

type elasticDecider struct {
	p  *ElasticityPolicy
	st ElasticityState
}

func (d *elasticDecider) Decide(obs Observation, now time.Time) Decision {
	var dec Decision
	dec, d.st = d.p.Decide(d.st, d.p.observe(obs), now)
	return dec
}

type elasticPool struct {
	p  *ElasticityPolicy
	st ElasticityState
}

func (d *elasticPool) DecidePool(pool string, members []Member, now time.Time) PoolDecision {
	ms := make([]PoolMember, len(members))
	for i, m := range members {
		ms[i] = PoolMember{Target: m.Target, Observation: d.p.observe(m.Observation)}
	}
	var dec PoolDecision
	dec, d.st = d.p.DecidePool(pool, d.st, ms, now)
	return dec
}
