package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
)

const day = 24 * time.Hour

// Queue is the queue-pressure policy's kind.
var Queue = newKind(Kind{Name: PolicyQueue, Doc: "replicas from the work queue's arrival rate, service time, backlog and SLOs", ReadsQueue: true},
	DefaultQueueOptions, queueKeys(), []keyschema.Check[QueueOptions]{checkQueueBounds},
	func(o QueueOptions) (Spec, error) {
		p, err := NewQueuePolicy(o)
		if err != nil {
			return nil, err
		}
		return queueSpec{p}, nil
	})

func queueKeys() []keyschema.Key[QueueOptions] {
	return []keyschema.Key[QueueOptions]{
		minReplicasKey(func(o *QueueOptions) *int { return &o.MinReplicas }),
		maxReplicasKey(func(o *QueueOptions) *int { return &o.MaxReplicas }, Unbounded),
		slotsPerReplicaKey(func(o *QueueOptions) *int { return &o.SlotsPerReplica }),
		keyschema.Float("ewmaAlpha", func(o *QueueOptions) *float64 { return &o.EwmaAlpha }, DefaultEwmaAlpha, keyschema.AboveUpTo(0, 1)).InSimulator().
			Describe("weight of the newest sample in the arrival-rate and service-time averages"),
		keyschema.Duration("defaultServiceTime", func(o *QueueOptions) *time.Duration { return &o.DefaultServiceTime }, DefaultServiceTime, 0, day, true).InSimulator().
			Describe("mean run time until a run has been observed"),
		keyschema.Float("targetUtilization", func(o *QueueOptions) *float64 { return &o.TargetUtilization }, DefaultTargetUtilization, keyschema.AboveUpTo(0, 1)).InSimulator().
			Describe("base = ceil(rate x service / targetUtilization)"),
		keyschema.Float("rateCutoff", func(o *QueueOptions) *float64 { return &o.RateCutoff }, DefaultRateCutoff, keyschema.AtLeast(0)).InSimulator().
			Describe("arrival rates (per second) below it count as 0"),
		keyschema.Duration("drainTime", func(o *QueueOptions) *time.Duration { return &o.DrainTime }, DefaultDrainTime, 0, day, true).InSimulator().
			Describe("drain = ceil(backlog x service / drainTime)"),
		keyschema.Text("sloClasses", func(o *QueueOptions) *[]Class { return &o.Classes }, nil,
			`SLO classes such as "critical=5s,high=30s,normal": names, each once, with an optional duration > 0`, parseClasses, classesText).
			Documented("(none)").
			Describe("SLO classes, highest priority first: `critical=5s,high=30s,normal` (a class without `=slo` only ranks)"),
		keyschema.Duration("reservationHorizon", func(o *QueueOptions) *time.Duration { return &o.ReservationHorizon }, DefaultReservationHorizon, 0, day, false).
			Describe("reservations active within it count (their peak)"),
		keyschema.Float("maxStepUpRatio", func(o *QueueOptions) *float64 { return &o.MaxStepUpRatio }, DefaultMaxStepUpRatio, keyschema.AtLeast(0)).InSimulator().
			Describe("a scale-up adds at most max(ceil(current x ratio), `maxStepUp`)"),
		keyschema.Int("maxStepUp", func(o *QueueOptions) *int { return &o.MaxStepUpAbs }, DefaultMaxStepUpAbs, 1, MaxReplicaBound).InSimulator().
			Describe("the absolute step-up"),
		keyschema.Duration("stabilizationWindow", func(o *QueueOptions) *time.Duration { return &o.StabilizationWindow }, DefaultStabilizationWindow, 0, day, false).InSimulator().
			Describe("scale down only to the highest desired count of this window"),
		keyschema.Int("maxStepDown", func(o *QueueOptions) *int { return &o.MaxStepDown }, DefaultMaxStepDown, 1, MaxReplicaBound).InSimulator().
			Describe("replicas removed at most per `scaleDownCooldown`"),
		keyschema.Duration("scaleDownCooldown", func(o *QueueOptions) *time.Duration { return &o.ScaleDownCooldown }, DefaultScaleDownCooldown, 0, day, false).InSimulator().
			Describe("time between scale-downs"),
	}
}

// checkQueueBounds refuses a maximum below the minimum.
func checkQueueBounds(o *QueueOptions, _ *keyschema.Context, _ func(string) bool) error {
	if o.MaxReplicas < o.MinReplicas {
		return &keyschema.MetadataError{Key: "maxReplicas", Value: fmt.Sprint(o.MaxReplicas), Allowed: fmt.Sprintf("a whole number >= %d (minReplicas)", o.MinReplicas)}
	}
	return nil
}

// parseClasses reads SLO classes written highest priority first as
// "name[=slo],...", for example "critical=5s,high=30s,normal,low": a class
// without "=slo" has none.
func parseClasses(s string, _ *keyschema.Context) ([]Class, string, bool) {
	var cs []Class
	for part := range strings.SplitSeq(s, ",") {
		name, slo, hasSLO := strings.Cut(strings.TrimSpace(part), "=")
		c := Class{Name: strings.TrimSpace(name)}
		switch {
		case c.Name == "":
			return nil, "class names must not be empty", false
		case slices.ContainsFunc(cs, func(o Class) bool { return o.Name == c.Name }):
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

func classesText(cs []Class) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Name
		if c.SLO > 0 {
			parts[i] += "=" + c.SLO.String()
		}
	}
	return strings.Join(parts, ",")
}

// queueSpec decides with the queue policy; it has no pools.
type queueSpec struct{ p *QueuePolicy }

func (s queueSpec) New() Decider               { return &queueDecider{p: s.p} }
func (queueSpec) NewPool() (PoolDecider, bool) { return nil, false }

type queueDecider struct {
	p  *QueuePolicy
	st QueueState
}

func (d *queueDecider) Decide(obs Observation, now time.Time) Decision {
	q := obs.Queue
	q.Replicas, q.InFlight = obs.Replicas, obs.InFlight
	var dec Decision
	dec, d.st = d.p.Evaluate(d.st, q, now)
	return dec
}
