package trigger

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// The names of the keys that code outside their declaration refers to:
// the checks between keys, the simulator and the registry.
const (
	KeyPolicy     = "policy"
	KeyProfile    = "profile"
	KeyLaunchTTL  = "launchTTL"
	KeyPool       = "pool"
	keyLeadWindow = "leadWindow"
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
)

// Floor modes: see signal.Options.FloorTarget.
const (
	FloorTarget   = "target"
	FloorReplicas = "replicas"
)

// PolicyNames are the values of the `policy` key: the pressure signal
// first (the default), then the replica policies' kinds.
func PolicyNames() []string { return append([]string{signal.PolicyPressure}, policy.Names()...) }

// onlyPressure: the keys of the pressure signal.
var onlyPressure = []string{signal.PolicyPressure}

var (
	metricNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	poolNamePattern   = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9._/]*[a-zA-Z0-9])?$`)
)

const day = 24 * time.Hour

// commonKeys are the keys of every trigger, in the order they are read:
// source and policy first, since which other keys apply depends on them;
// then the pressure signal's, then the replica policies' bookkeeping (a
// policy's own keys are its kind's).
func commonKeys(s *Schema) []keyschema.Key[Trigger] {
	return slices.Concat(triggerKeys(s), signalKeys(), ledgerKeys())
}

// triggerKeys are what every trigger says: where pressure comes from, how
// it becomes a decision, what KEDA reads and when to sample.
func triggerKeys(s *Schema) []keyschema.Key[Trigger] {
	return []keyschema.Key[Trigger]{sourceKey(s), policyKey, profileKey, targetPressureKey, activationValueKey, metricNameKey, sampleIntervalKey}
}

// sourceKey is `source`: its values are the schema's source kinds.
func sourceKey(s *Schema) keyschema.Key[Trigger] {
	return keyschema.Enum("source", func(t *Trigger) *string { return &t.SourceKind }, DefaultSource, s.kindNames()...).
		Then(func(t *Trigger, c *keyschema.Context) { c.Source = t.SourceKind }).
		Documented("(required; the scaler's own default target: `host`)").
		Describe("where pressure comes from: `host` (the scaler's own machine), `scrape` (the replicas' `/metrics`), `prometheus` (a Prometheus server), `otlp` (what the replicas push over OTLP); see [Sources](#sources)")
}

var policyKey = keyschema.Enum("policy", func(t *Trigger) *string { return &t.Policy.Name }, signal.PolicyPressure, PolicyNames()...).
	Then(startPolicy).
	Describe("how samples become a decision: the pressure signal or a replica policy; see [Replica policies](#replica-policies)")

var profileKey = keyschema.Enum("profile", func(t *Trigger) *string { return &t.Profile }, signal.DefaultProfile, signal.ProfileNames()...).For(onlyPressure...).
	Then(startProfile).InSimulator().
	Describe("the pressure signal's behaviour: `budgeted` (the default) provisions to a shortfall budget and a churn budget and forecasts the season, `responsive` follows demand and compensates the metric pipeline's lag (lead, stale-sample hysteresis, saturation surge), `original` is the slow-release signal without compensation (see [Profiles](#profiles)); the keys below override it")

// KEDA sends the target in thousandths, truncated: below 0.001 the HPA
// reads 0.
var targetPressureKey = keyschema.Float("targetPressure", func(t *Trigger) *float64 { return &t.TargetPressure }, DefaultTargetPressure, keyschema.Between(0.001, 1e6)).
	For(onlyPressure...).OnlyRead().
	Describe("per-replica target, sent as `targetSizeFloat`")

var activationValueKey = keyschema.Float("activationValue", func(t *Trigger) *float64 { return &t.ActivationValue }, 0, keyschema.Between(0, 1e9)).OnlyRead().
	Describe("`IsActive` when `scaleValue` exceeds it")

var metricNameKey = keyschema.String("metricName", func(t *Trigger) *string { return &t.MetricName }, DefaultMetricName,
	"lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 200 bytes",
	func(s string, _ *keyschema.Context) bool { return len(s) <= 200 && metricNamePattern.MatchString(s) }).
	OnlyRead().Documented("`barometer-pressure`; a policy's: `barometer-<policy>`").
	DefaultFrom(func(t *Trigger, c *keyschema.Context) { t.MetricName = defaultMetricName(c.Policy) }).
	Describe("the metric's name (KEDA prefixes `s{index}-`)")

var sampleIntervalKey = keyschema.Duration("sampleInterval", func(t *Trigger) *time.Duration { return &t.Interval }, signal.DefaultSampleInterval, MinInterval, MaxInterval, false).
	Documented("`BAROMETER_SAMPLE_INTERVAL` (5s)").
	DefaultFrom(func(t *Trigger, c *keyschema.Context) { t.Interval = c.DefaultInterval }).
	Describe("time between samples")

// commonChecks relate keys to each other.
var commonChecks = []keyschema.Check[Trigger]{
	func(t *Trigger, _ *keyschema.Context, set func(string) bool) error {
		if n := t.Signal.LeadWindow; set(keyLeadWindow) && n > 0 && n < 3 {
			return &keyschema.MetadataError{Key: keyLeadWindow, Value: strconv.Itoa(n), Allowed: "0 (no lead) or a whole number from 3 to " + strconv.Itoa(signal.MaxLeadWindow)}
		}
		return nil
	},
}

// finish derives what follows from the keys: the target a replica count is
// read at, and the floor.
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

// poolKey is what a pool's members must agree on: the policy, its keys,
// its launch TTL and the sample interval (cost and the pool's name aside).
func poolKey(t *Trigger, policyTexts []string) string {
	if t.Policy.Pool == "" {
		return ""
	}
	return fmt.Sprintf("policy=%s %s launchTTL=%s sampleInterval=%s", t.Policy.Name, strings.Join(policyTexts, " "), t.Policy.LaunchTTL, t.Interval)
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
