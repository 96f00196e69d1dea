package trigger

import (
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// policyKeys are the replica policies' keys, each read by the policies
// that name it.
func policyKeys() []keyschema.Key[Trigger] {
	return []keyschema.Key[Trigger]{
		keyschema.Float(keyCostPerReplicaSecond, func(t *Trigger) *float64 { return &t.Policy.CostPerReplicaSecond }, 0, keyschema.AtLeast(0)).
			Describe("price of one replica for one second"),
		keyschema.Int(keyMaxReplicas, maxReplicas, policy.Unbounded, 0, MaxReplicaBound).For(bounded...).
			Documented("unbounded; `max_count`: `0`").
			DefaultFrom(func(t *Trigger, c *keyschema.Context) {
				*maxReplicas(t) = policy.DefaultElasticityOptions(c.Policy).Max
			}).
			Format(func(t *Trigger) string { return policy.BoundText(*maxReplicas(t)) }).
			Describe("upper bound of the decided count; `queue` needs it >= `minReplicas`"),
		keyschema.Duration(KeyLaunchTTL, func(t *Trigger) *time.Duration { return &t.Policy.LaunchTTL }, policy.DefaultLaunchTTL, 0, day, true).For(replicaPolicy...).InSimulator().
			Describe("how long a scale-up counts as in flight and a scale-down as leaving; set it above start-up + metric delay + one sample"),
		keyschema.String(KeyPool, func(t *Trigger) *string { return &t.Policy.Pool }, "",
			"a name of letters, digits, '-', '.', '_' and '/', starting and ending with a letter or digit, at most 200 bytes",
			func(s string, _ *keyschema.Context) bool { return len(s) <= 200 && poolNamePattern.MatchString(s) }).For(elastic...).
			Documented("(none)").
			Describe("decide together with the targets of the same pool"),
		keyschema.Int("slotsPerReplica", slotsPerReplica, 1, 1, MaxReplicaBound).For(bounded...).
			Describe("runs one replica serves at once: the queue policy's replicas are ceil(slots / it), utilization is busy / (replicas x it)"),
		keyschema.Float("ewmaAlpha", func(t *Trigger) *float64 { return &t.Policy.Queue.EwmaAlpha }, policy.DefaultEwmaAlpha, keyschema.AboveUpTo(0, 1)).For(onlyQueue...).InSimulator().
			Describe("weight of the newest sample in the arrival-rate and service-time averages"),
		keyschema.Duration("defaultServiceTime", func(t *Trigger) *time.Duration { return &t.Policy.Queue.DefaultServiceTime }, policy.DefaultServiceTime, 0, day, true).For(onlyQueue...).InSimulator().
			Describe("mean run time until a run has been observed"),
		keyschema.Float(KeyTargetUtilization, func(t *Trigger) *float64 { return &t.Policy.Queue.TargetUtilization }, policy.DefaultTargetUtilization, keyschema.AboveUpTo(0, 1)).For(onlyQueue...).InSimulator().
			Describe("base = ceil(rate x service / targetUtilization)"),
		keyschema.Float("rateCutoff", func(t *Trigger) *float64 { return &t.Policy.Queue.RateCutoff }, policy.DefaultRateCutoff, keyschema.AtLeast(0)).For(onlyQueue...).InSimulator().
			Describe("arrival rates (per second) below it count as 0"),
		keyschema.Duration("drainTime", func(t *Trigger) *time.Duration { return &t.Policy.Queue.DrainTime }, policy.DefaultDrainTime, 0, day, true).For(onlyQueue...).InSimulator().
			Describe("drain = ceil(backlog x service / drainTime)"),
		keyschema.Text("sloClasses", func(t *Trigger) *[]policy.Class { return &t.Policy.Queue.Classes }, nil,
			`SLO classes such as "critical=5s,high=30s,normal": names, each once, with an optional duration > 0`, parseClasses, classesText).For(onlyQueue...).
			Documented("(none)").
			Describe("SLO classes, highest priority first: `critical=5s,high=30s,normal` (a class without `=slo` only ranks)"),
		keyschema.Duration("reservationHorizon", func(t *Trigger) *time.Duration { return &t.Policy.Queue.ReservationHorizon }, policy.DefaultReservationHorizon, 0, day, false).For(onlyQueue...).
			Describe("reservations active within it count (their peak)"),
		keyschema.Float("maxStepUpRatio", func(t *Trigger) *float64 { return &t.Policy.Queue.MaxStepUpRatio }, policy.DefaultMaxStepUpRatio, keyschema.AtLeast(0)).For(onlyQueue...).InSimulator().
			Describe("a scale-up adds at most max(ceil(current x ratio), `maxStepUp`)"),
		keyschema.Int("maxStepUp", func(t *Trigger) *int { return &t.Policy.Queue.MaxStepUpAbs }, policy.DefaultMaxStepUpAbs, 1, MaxReplicaBound).For(onlyQueue...).InSimulator().
			Describe("the absolute step-up"),
		keyschema.Duration("stabilizationWindow", func(t *Trigger) *time.Duration { return &t.Policy.Queue.StabilizationWindow }, policy.DefaultStabilizationWindow, 0, day, false).For(onlyQueue...).InSimulator().
			Describe("scale down only to the highest desired count of this window"),
		keyschema.Int("maxStepDown", func(t *Trigger) *int { return &t.Policy.Queue.MaxStepDown }, policy.DefaultMaxStepDown, 1, MaxReplicaBound).For(onlyQueue...).InSimulator().
			Describe("replicas removed at most per `scaleDownCooldown`"),
		keyschema.Duration("scaleDownCooldown", func(t *Trigger) *time.Duration { return &t.Policy.Queue.ScaleDownCooldown }, policy.DefaultScaleDownCooldown, 0, day, false).For(onlyQueue...).InSimulator().
			Describe("time between scale-downs"),
		keyschema.Float(keyThreshold, func(t *Trigger) *float64 { return &t.Policy.Elasticity.High }, policy.DefaultHighThreshold, keyschema.AboveUpTo(0, 1)).For(onlyThreshold...).InSimulator().
			Describe("high utilization threshold"),
		keyschema.Float(keyThresholdLow, func(t *Trigger) *float64 { return &t.Policy.Elasticity.Low }, policy.DefaultLowThreshold, keyschema.Between(0, 1)).For(onlyThreshold...).InSimulator().
			Describe("low utilization threshold, at most `threshold`"),
		keyschema.Int("ticks", func(t *Trigger) *int { return &t.Policy.Elasticity.Ticks }, policy.DefaultThresholdTicks, 1, 1000).For(onlyThreshold...).InSimulator().
			Describe("consecutive ticks past a threshold before a step"),
	}
}

// startPolicy starts the chosen policy's options from pkg/policy's
// defaults, so the fields no key of this policy sets (an elasticity
// policy's thresholds, say) hold values the policy accepts; the keys after
// it apply by this policy.
func startPolicy(t *Trigger, c *keyschema.Context) {
	c.Policy = t.Policy.Name
	switch {
	case t.Policy.Name == policy.PolicyQueue:
		t.Policy.Queue = policy.DefaultQueueOptions()
	case t.Policy.Elastic():
		t.Policy.Elasticity = policy.DefaultElasticityOptions(t.Policy.Name)
	}
	t.Policy.LaunchTTL = policy.DefaultLaunchTTL
}

// minReplicas, maxReplicas and slotsPerReplica are one key each, read by
// several policies into each policy's own options; the policy key is read
// first, so the field is known.
func minReplicas(t *Trigger) *int {
	switch {
	case t.Policy.Name == signal.PolicyPressure:
		return &t.Signal.MinReplicas
	case t.Policy.Name == policy.PolicyQueue:
		return &t.Policy.Queue.MinReplicas
	}
	return &t.Policy.Elasticity.Min
}

func maxReplicas(t *Trigger) *int {
	if t.Policy.Name == policy.PolicyQueue {
		return &t.Policy.Queue.MaxReplicas
	}
	return &t.Policy.Elasticity.Max
}

func slotsPerReplica(t *Trigger) *int {
	if t.Policy.Name == policy.PolicyQueue {
		return &t.Policy.Queue.SlotsPerReplica
	}
	return &t.Policy.Elasticity.SlotsPerReplica
}

// parseClasses reads SLO classes written highest priority first as
// "name[=slo],...", for example "critical=5s,high=30s,normal,low": a class
// without "=slo" has none.
func parseClasses(s string, _ *keyschema.Context) ([]policy.Class, string, bool) {
	var cs []policy.Class
	for part := range strings.SplitSeq(s, ",") {
		name, slo, hasSLO := strings.Cut(strings.TrimSpace(part), "=")
		c := policy.Class{Name: strings.TrimSpace(name)}
		switch {
		case c.Name == "":
			return nil, "class names must not be empty", false
		case slices.ContainsFunc(cs, func(o policy.Class) bool { return o.Name == c.Name }):
			return nil, "each class listed once; " + keyschema.Quote(c.Name) + " is repeated", false
		}
		if hasSLO {
			d, err := time.ParseDuration(strings.TrimSpace(slo))
			if err != nil || d <= 0 || d > day {
				return nil, `name=duration with a duration > 0 and at most 24h, e.g. "critical=5s"; ` + keyschema.Quote(strings.TrimSpace(part)) + " is not", false
			}
			c.SLO = d
		}
		cs = append(cs, c)
	}
	return cs, "", true
}

func classesText(cs []policy.Class) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Name
		if c.SLO > 0 {
			parts[i] += "=" + c.SLO.String()
		}
	}
	return strings.Join(parts, ",")
}
