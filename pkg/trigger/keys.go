package trigger

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// The names of the keys the parser itself looks at.
const (
	keySource = "source"
	keyPolicy = "policy"
)

// Defaults of the trigger keys that are not signal or policy options.
const (
	DefaultTargetPressure = 0.7
	DefaultMetricName     = "barometer-pressure"
	DefaultSource         = "host"
	// MinInterval and MaxInterval bound sampleInterval and the scaler's
	// BAROMETER_SAMPLE_INTERVAL alike.
	MinInterval = 100 * time.Millisecond
	MaxInterval = 10 * time.Minute
	// MaxReplicaBound bounds every replica count a trigger names.
	MaxReplicaBound = 10000
)

// Floor modes: see signal.Options.FloorTarget.
const (
	FloorTarget   = "target"
	FloorReplicas = "replicas"
)

// PolicyNames are the values of the `policy` key: the pressure signal
// first (the default), then pkg/policy's replica policies.
func PolicyNames() []string { return append([]string{signal.PolicyPressure}, policy.Names()...) }

var (
	onlyPressure  = []string{signal.PolicyPressure}
	onlyQueue     = []string{policy.PolicyQueue}
	onlyThreshold = []string{policy.PolicyPoolWithThreshold}
	replicaPolicy = policy.Names()
	elastic       = []string{policy.PolicyFixed, policy.PolicyFullyElastic, policy.PolicyMaxCount, policy.PolicyPoolWithThreshold}
	bounded       = []string{policy.PolicyQueue, policy.PolicyFullyElastic, policy.PolicyMaxCount, policy.PolicyPoolWithThreshold}
)

var (
	metricNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	poolNamePattern   = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9._/]*[a-zA-Z0-9])?$`)
)

const day = 24 * time.Hour

// commonKeys are the keys of every trigger, in the order they are read:
// source and policy first, since which other keys apply depends on them.
func commonKeys(s *Schema) []Key[Trigger] {
	return []Key[Trigger]{
		Enum(keySource, func(t *Trigger) *string { return &t.SourceKind }, DefaultSource, s.kindNames()...).
			Describe("where pressure comes from: `host` (the scaler's own machine), `scrape` (the replicas' `/metrics`), `prometheus` (a Prometheus server); see [Sources](#sources)"),
		Enum(keyPolicy, func(t *Trigger) *string { return &t.Policy.Name }, signal.PolicyPressure, PolicyNames()...).
			Then(startPolicy).
			Describe("how samples become a decision: the pressure signal or a replica policy; see [Replica policies](#replica-policies)"),

		Enum("profile", func(t *Trigger) *string { return &t.Profile }, signal.DefaultProfile, signal.ProfileNames()...).For(onlyPressure...).
			Then(startProfile).
			Describe("the pressure signal's behaviour: `responsive` follows demand and compensates the metric pipeline's lag (lead, stale-sample hysteresis, saturation surge), `original` is the slow-release signal without compensation (see [Profiles](#profiles)); the keys below override it"),

		// What KEDA reads.
		// KEDA sends the target in thousandths, truncated: below 0.001 the HPA reads 0.
		Float("targetPressure", func(t *Trigger) *float64 { return &t.TargetPressure }, DefaultTargetPressure, Between(0.001, 1e6)).
			For(onlyPressure...).OnlyRead().
			Describe("per-replica target, sent as `targetSizeFloat`"),
		Float("activationValue", func(t *Trigger) *float64 { return &t.ActivationValue }, 0, Between(0, 1e9)).OnlyRead().
			Describe("`IsActive` when `scaleValue` exceeds it"),
		String("metricName", func(t *Trigger) *string { return &t.MetricName }, DefaultMetricName,
			"lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 200 bytes",
			func(s string, _ *Context) bool { return len(s) <= 200 && metricNamePattern.MatchString(s) }).
			OnlyRead().Documented("`barometer-pressure`; a policy's: `barometer-<policy>`").
			DefaultFrom(func(t *Trigger, c *Context) { t.MetricName = defaultMetricName(c.Policy) }).
			Describe("the metric's name (KEDA prefixes `s{index}-`)"),

		// When to sample, and the pressure signal.
		Duration("sampleInterval", func(t *Trigger) *time.Duration { return &t.Interval }, signal.DefaultSampleInterval, MinInterval, MaxInterval, false).
			Documented("`BAROMETER_SAMPLE_INTERVAL` (5s)").
			DefaultFrom(func(t *Trigger, c *Context) { t.Interval = c.DefaultInterval }).
			Describe("time between samples"),
		Int("minReplicas", minReplicas, 0, 0, MaxReplicaBound).For(append(onlyPressure, bounded...)...).
			Describe("lower bound of the decided count (a pool's total); `pressure`: the replica floor, once the first sample lands"),
		Enum("floor", func(t *Trigger) *string { return &t.Floor }, FloorTarget, FloorTarget, FloorReplicas).For(onlyPressure...).
			Describe("`target`: floor `scaleValue` at `minReplicas x targetPressure`, so the HPA rests at exactly `minReplicas`; `replicas`: floor at `minReplicas` itself (the HPA then rests at `minReplicas / targetPressure`)"),
		signalDuration("ewmaHalfLife", func(o *signal.Options) *time.Duration { return &o.EwmaHalfLife }).
			Describe("half-life of the slow release; `0s` turns smoothing off"),
		signalDuration("scaleInGateWindow", func(o *signal.Options) *time.Duration { return &o.ScaleInGateWindow }).
			Describe("how long scale-in preconditions must hold"),
		signalFloat("activationScaleInThreshold", func(o *signal.Options) *float64 { return &o.ActivationScaleInThreshold }, Between(0, 1)).
			Describe("activation at or above this blocks scale-in"),
		signalFloat("resourceScaleInThreshold", func(o *signal.Options) *float64 { return &o.ResourceScaleInThreshold }, Between(0, 1)).
			Describe("resource at or above this blocks scale-in"),
		signalFloat("walDispatchScaleInThreshold", func(o *signal.Options) *float64 { return &o.WalDispatchScaleInThreshold }, Between(0, 1)).
			Describe("WAL dispatch at or above this blocks scale-in"),
		Bool("splitAwareScaleIn", func(t *Trigger) *bool { return &t.Signal.SplitAwareScaleIn }, true).For(onlyPressure...).
			Describe("hold scale-in while a split is in flight"),
		Duration("replicaStartup", func(t *Trigger) *time.Duration { return &t.Signal.ReplicaStartup }, 0, 0, signal.MaxReplicaStartup, false).For(onlyPressure...).
			Describe("how long a new replica takes to count (start-up, readiness, any delay the source does not report); added to the sample's age, it is the lag the lead covers; a `k8s://` target's measured start-up counts when longer (docs/compensation.md)"),
		signalInt("leadWindow", func(o *signal.Options) *int { return &o.LeadWindow }, signal.MaxLeadWindow).
			Describe("samples of raw demand the lead reads its trend and noise from, 0 (no lead, no noise margin) or 3 and more"),
		signalFloat("leadSignificance", func(o *signal.Options) *float64 { return &o.LeadSignificance }, Between(0, 10)).
			Describe("how significant a rise must be (its Mann-Kendall z) before it leads; 0 reads as 2"),
		signalFloat("scaleInHysteresis", func(o *signal.Options) *float64 { return &o.ScaleInHysteresis }, Between(0, 1)).
			Describe("on a stale sample, a fall stops at demand x (1 + this)"),
		signalFloat("scaleInNoiseMargin", func(o *signal.Options) *float64 { return &o.ScaleInNoiseMargin }, Between(0, 10)).
			Describe("on a stale sample, a fall stops at demand + this many widths of the measured noise (needs `leadWindow`)"),
		signalBool("saturationSurge", func(o *signal.Options) *bool { return &o.SaturationSurge }).
			Describe("a saturated sample across n replicas asks for 2n (n + 4 when stale); held while the samples stay saturated, ended by the first that is not"),
		signalFloat("surgeLevel", func(o *signal.Options) *float64 { return &o.SurgeLevel }, Between(0, 1)).
			Describe("dominant pressure at or above which a sample counts as saturated; 0 reads as 1"),
		Float("activationWorkingSetTarget", func(t *Trigger) *float64 { return &t.ActivationWorkingSetTarget }, pressure.DefaultActivationWorkingSetTarget, Between(0, 1e15)).
			Describe("working set per replica that reads 1.0; `0` turns the dimension off"),

		// The replica policies.
		Float("costPerReplicaSecond", func(t *Trigger) *float64 { return &t.Policy.CostPerReplicaSecond }, 0, AtLeast(0)).
			Describe("price of one replica for one second"),
		Int("maxReplicas", maxReplicas, policy.Unbounded, 0, MaxReplicaBound).For(bounded...).
			Documented("unbounded; `max_count`: `0`").
			DefaultFrom(func(t *Trigger, c *Context) { *maxReplicas(t) = policy.DefaultElasticityOptions(c.Policy).Max }).
			Format(func(t *Trigger) string { return policy.BoundText(*maxReplicas(t)) }).
			Describe("upper bound of the decided count; `queue` needs it >= `minReplicas`"),
		Duration("launchTTL", func(t *Trigger) *time.Duration { return &t.Policy.LaunchTTL }, policy.DefaultLaunchTTL, 0, day, true).For(replicaPolicy...).
			Describe("how long a scale-up counts as in flight and a scale-down as leaving; set it above start-up + metric delay + one sample"),
		String("pool", func(t *Trigger) *string { return &t.Policy.Pool }, "",
			"a name of letters, digits, '-', '.', '_' and '/', starting and ending with a letter or digit, at most 200 bytes",
			func(s string, _ *Context) bool { return len(s) <= 200 && poolNamePattern.MatchString(s) }).For(elastic...).
			Documented("(none)").
			Describe("decide together with the targets of the same pool"),
		Int("slotsPerReplica", slotsPerReplica, 1, 1, MaxReplicaBound).For(bounded...).
			Describe("runs one replica serves at once: the queue policy's replicas are ceil(slots / it), utilization is busy / (replicas x it)"),
		Float("ewmaAlpha", func(t *Trigger) *float64 { return &t.Policy.Queue.EwmaAlpha }, policy.DefaultEwmaAlpha, AboveUpTo(0, 1)).For(onlyQueue...).
			Describe("weight of the newest sample in the arrival-rate and service-time averages"),
		Duration("defaultServiceTime", func(t *Trigger) *time.Duration { return &t.Policy.Queue.DefaultServiceTime }, policy.DefaultServiceTime, 0, day, true).For(onlyQueue...).
			Describe("mean run time until a run has been observed"),
		Float("targetUtilization", func(t *Trigger) *float64 { return &t.Policy.Queue.TargetUtilization }, policy.DefaultTargetUtilization, AboveUpTo(0, 1)).For(onlyQueue...).
			Describe("base = ceil(rate x service / targetUtilization)"),
		Float("rateCutoff", func(t *Trigger) *float64 { return &t.Policy.Queue.RateCutoff }, policy.DefaultRateCutoff, AtLeast(0)).For(onlyQueue...).
			Describe("arrival rates (per second) below it count as 0"),
		Duration("drainTime", func(t *Trigger) *time.Duration { return &t.Policy.Queue.DrainTime }, policy.DefaultDrainTime, 0, day, true).For(onlyQueue...).
			Describe("drain = ceil(backlog x service / drainTime)"),
		Text("sloClasses", func(t *Trigger) *[]policy.Class { return &t.Policy.Queue.Classes }, nil,
			`SLO classes such as "critical=5s,high=30s,normal": names, each once, with an optional duration > 0`, parseClasses, classesText).For(onlyQueue...).
			Documented("(none)").
			Describe("SLO classes, highest priority first: `critical=5s,high=30s,normal` (a class without `=slo` only ranks)"),
		Duration("reservationHorizon", func(t *Trigger) *time.Duration { return &t.Policy.Queue.ReservationHorizon }, policy.DefaultReservationHorizon, 0, day, false).For(onlyQueue...).
			Describe("reservations active within it count (their peak)"),
		Float("maxStepUpRatio", func(t *Trigger) *float64 { return &t.Policy.Queue.MaxStepUpRatio }, policy.DefaultMaxStepUpRatio, AtLeast(0)).For(onlyQueue...).
			Describe("a scale-up adds at most max(ceil(current x ratio), `maxStepUp`)"),
		Int("maxStepUp", func(t *Trigger) *int { return &t.Policy.Queue.MaxStepUpAbs }, policy.DefaultMaxStepUpAbs, 1, MaxReplicaBound).For(onlyQueue...).
			Describe("the absolute step-up"),
		Duration("stabilizationWindow", func(t *Trigger) *time.Duration { return &t.Policy.Queue.StabilizationWindow }, policy.DefaultStabilizationWindow, 0, day, false).For(onlyQueue...).
			Describe("scale down only to the highest desired count of this window"),
		Int("maxStepDown", func(t *Trigger) *int { return &t.Policy.Queue.MaxStepDown }, policy.DefaultMaxStepDown, 1, MaxReplicaBound).For(onlyQueue...).
			Describe("replicas removed at most per `scaleDownCooldown`"),
		Duration("scaleDownCooldown", func(t *Trigger) *time.Duration { return &t.Policy.Queue.ScaleDownCooldown }, policy.DefaultScaleDownCooldown, 0, day, false).For(onlyQueue...).
			Describe("time between scale-downs"),
		Float("threshold", func(t *Trigger) *float64 { return &t.Policy.Elasticity.High }, policy.DefaultHighThreshold, AboveUpTo(0, 1)).For(onlyThreshold...).
			Describe("high utilization threshold"),
		Float("thresholdLow", func(t *Trigger) *float64 { return &t.Policy.Elasticity.Low }, policy.DefaultLowThreshold, Between(0, 1)).For(onlyThreshold...).
			Describe("low utilization threshold, at most `threshold`"),
		Int("ticks", func(t *Trigger) *int { return &t.Policy.Elasticity.Ticks }, policy.DefaultThresholdTicks, 1, 1000).For(onlyThreshold...).
			Describe("consecutive ticks past a threshold before a step"),
	}
}

// startPolicy starts the chosen policy's options from pkg/policy's
// defaults, so the fields no key of this policy sets (an elasticity
// policy's thresholds, say) hold values the policy accepts.
func startPolicy(t *Trigger, _ *Context) {
	switch {
	case t.Policy.Name == policy.PolicyQueue:
		t.Policy.Queue = policy.DefaultQueueOptions()
	case t.Policy.Elastic():
		t.Policy.Elasticity = policy.DefaultElasticityOptions(t.Policy.Name)
	}
	t.Policy.LaunchTTL = policy.DefaultLaunchTTL
}

// startProfile starts the signal's options from the profile, so that each
// option key's default is the profile's.
func startProfile(t *Trigger, _ *Context) {
	o, err := signal.ProfileOptions(t.Profile)
	if err == nil { // the Enum admitted only known profiles
		t.Signal = o
	}
}

// signalFloat, signalDuration, signalInt and signalBool declare a key of
// one of the signal's options whose default is the profile's (profiled),
// from the option's field alone.
func signalFloat(name string, f func(*signal.Options) *float64, r FloatRange) Key[Trigger] {
	return profiled(Float(name, func(t *Trigger) *float64 { return f(&t.Signal) }, 0, r), func(o signal.Options) string { return formatFloat(*f(&o)) })
}

func signalDuration(name string, f func(*signal.Options) *time.Duration) Key[Trigger] {
	return profiled(Duration(name, func(t *Trigger) *time.Duration { return f(&t.Signal) }, 0, 0, day, false), func(o signal.Options) string { return f(&o).String() })
}

func signalInt(name string, f func(*signal.Options) *int, hi int) Key[Trigger] {
	return profiled(Int(name, func(t *Trigger) *int { return f(&t.Signal) }, 0, 0, hi), func(o signal.Options) string { return strconv.Itoa(*f(&o)) })
}

func signalBool(name string, f func(*signal.Options) *bool) Key[Trigger] {
	return profiled(Bool(name, func(t *Trigger) *bool { return f(&t.Signal) }, false), func(o signal.Options) string { return strconv.FormatBool(*f(&o)) })
}

// profiled makes a signal option key's default the profile's: the key
// takes no default of its own (startProfile put the profile's in place),
// and its documented default names each profile's.
func profiled[T any](k Key[Trigger], get func(signal.Options) T) Key[Trigger] {
	var parts []string
	for _, name := range signal.ProfileNames() {
		o, _ := signal.ProfileOptions(name)
		parts = append(parts, fmt.Sprintf("%s: `%v`", name, get(o)))
	}
	k.reset, k.fromProfile = nil, true
	return k.For(onlyPressure...).Documented(strings.Join(parts, "; "))
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

// commonChecks relate keys to each other.
var commonChecks = []Check[Trigger]{
	func(t *Trigger, _ *Context, set func(string) bool) error {
		if n := t.Signal.LeadWindow; set("leadWindow") && n > 0 && n < 3 {
			return &MetadataError{Key: "leadWindow", Value: strconv.Itoa(n), Allowed: "0 (no lead) or a whole number from 3 to " + strconv.Itoa(signal.MaxLeadWindow)}
		}
		return nil
	},
	func(t *Trigger, _ *Context, _ func(string) bool) error {
		if q := t.Policy.Queue; t.Policy.Name == policy.PolicyQueue && q.MaxReplicas < q.MinReplicas {
			return &MetadataError{Key: "maxReplicas", Value: fmt.Sprint(q.MaxReplicas), Allowed: fmt.Sprintf("a whole number >= %d (minReplicas)", q.MinReplicas)}
		}
		return nil
	},
	func(t *Trigger, _ *Context, _ func(string) bool) error {
		if e := t.Policy.Elasticity; t.Policy.Name == policy.PolicyPoolWithThreshold && e.Low > e.High {
			return &MetadataError{Key: "thresholdLow", Value: formatFloat(e.Low), Allowed: Between(0, e.High).String()}
		}
		return nil
	},
}

// finish derives what follows from the keys: the policies' own names in
// their options, the target a replica count is read at, and the floor.
func finish(t *Trigger) {
	if t.Policy.Replicas() {
		t.TargetPressure = 1
		return
	}
	if t.Signal.SaturationSurge {
		t.Signal.SurgeTarget = t.TargetPressure
	}
	// The target only matters to the floor when there is one; leaving it
	// out otherwise lets ScaledObjects with different targets share a
	// sampler.
	if t.Floor == FloorTarget && t.Signal.MinReplicas > 0 {
		t.Signal.FloorTarget = t.TargetPressure
	}
}

// poolKey is the policy keys a pool's members must agree on, cost and the
// pool's name aside, and the sample interval.
func poolKey(st *state, t *Trigger) string {
	if t.Policy.Pool == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "policy=%s", t.Policy.Name)
	for _, k := range commonKeys(st.schema) {
		if k.Policies == nil || k.Name == "pool" || k.Name == "costPerReplicaSecond" || !st.applies(k.Info) {
			continue
		}
		fmt.Fprintf(&b, " %s=%s", k.Name, k.text(t))
	}
	fmt.Fprintf(&b, " sampleInterval=%s", t.Interval)
	return b.String()
}

// defaultMetricName is barometer-pressure for the pressure signal and
// names the policy otherwise (barometer-fully-elastic), so the HPA's
// metric says what produced it.
func defaultMetricName(policyName string) string {
	if policyName == signal.PolicyPressure || policyName == "" {
		return DefaultMetricName
	}
	return "barometer-" + strings.ReplaceAll(policyName, "_", "-")
}

// parseClasses reads SLO classes written highest priority first as
// "name[=slo],...", for example "critical=5s,high=30s,normal,low": a class
// without "=slo" has none.
func parseClasses(s string, _ *Context) ([]policy.Class, string, bool) {
	var cs []policy.Class
	for part := range strings.SplitSeq(s, ",") {
		name, slo, hasSLO := strings.Cut(strings.TrimSpace(part), "=")
		c := policy.Class{Name: strings.TrimSpace(name)}
		switch {
		case c.Name == "":
			return nil, "class names must not be empty", false
		case slices.ContainsFunc(cs, func(o policy.Class) bool { return o.Name == c.Name }):
			return nil, "each class listed once; " + Quote(c.Name) + " is repeated", false
		}
		if hasSLO {
			d, err := time.ParseDuration(strings.TrimSpace(slo))
			if err != nil || d <= 0 || d > day {
				return nil, `name=duration with a duration > 0 and at most 24h, e.g. "critical=5s"; ` + Quote(strings.TrimSpace(part)) + " is not", false
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
