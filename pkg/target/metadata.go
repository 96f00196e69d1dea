package target

import (
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/target/decide"
)

// Defaults of the trigger metadata that are not signal options.
const (
	DefaultTargetPressure = 0.7
	DefaultMetricName     = "barometer-pressure"
	DefaultSource         = "host"
)

// Floor modes: see signal.Options.FloorTarget.
const (
	FloorTarget   = "target"
	FloorReplicas = "replicas"
)

// kedaKeys are KEDA's own trigger keys: forwarded to every external scaler,
// meaningful only to KEDA.
var kedaKeys = []string{"scalerAddress", "enableTLS", "unsafeSsl"}

var metricNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// Metadata is a trigger's scalerMetadata, parsed once. Every later step
// reads fields, never the raw map.
type Metadata struct {
	// Source selects and configures where pressure comes from.
	Source SourceSpec
	// Policy is the `policy` key and the keys that tune it.
	Policy decide.Spec
	// TargetPressure is the per-replica target sent as targetSizeFloat:
	// the targetPressure key for the pressure signal, and 1 for a policy
	// whose signal is a replica count, so the HPA asks for exactly that
	// count (AverageValue: ceil(count / 1)).
	TargetPressure float64
	// ActivationValue: IsActive when ScaleValue exceeds it.
	ActivationValue float64
	// MetricName is the metric's name on the KEDA side.
	MetricName string
	// Floor is FloorTarget or FloorReplicas.
	Floor string
	// Interval is the sample interval.
	Interval time.Duration
	// Signal holds the computer's options, floor included (the defaults
	// for a replica policy, which does not read them).
	Signal signal.Options
	// ActivationWorkingSetTarget normalises the activation dimension.
	ActivationWorkingSetTarget float64
}

// SamplerKey identifies the sampler a target needs: the same source with the
// same signal options and policy shares one sampler; read-side keys (target,
// activation, metric name) do not split it.
// The key reads as the source's own key and a short hash of the rest, so it
// stays short enough for a metric label.
func (m Metadata) SamplerKey() string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%+v|%g|%s", m.Interval, m.Signal, m.ActivationWorkingSetTarget, m.Policy.Key())
	return fmt.Sprintf("%s@%016x", m.Source.Key(), h.Sum64())
}

// Parse reads scalerMetadata. Every error is a *MetadataError naming the key.
func (s *Sources) Parse(raw map[string]string, defaultInterval time.Duration) (Metadata, error) {
	p := NewParams(raw)
	p.Ignore(kedaKeys...)
	var (
		m   Metadata
		err error
	)
	fail := func(e error) (Metadata, error) { return Metadata{}, p.Spelled(e) }

	kind, err := p.Enum("source", DefaultSource, s.names()...)
	if err != nil {
		return fail(err)
	}
	name, err := p.Enum("policy", signal.PolicyPressure, PolicyNames()...)
	if err != nil {
		return fail(err)
	}
	if err := checkPolicyKeys(p, name); err != nil {
		return fail(err)
	}
	if m.Policy, err = parsePolicy(p, name); err != nil {
		return fail(err)
	}
	m.TargetPressure = 1
	if !m.Policy.Replicas() {
		if m.TargetPressure, err = p.PositiveFloat("targetPressure", DefaultTargetPressure); err != nil {
			return fail(err)
		}
	}
	if m.ActivationValue, err = p.Float("activationValue", 0, 0, math.Inf(1)); err != nil {
		return fail(err)
	}
	if m.MetricName = p.String("metricName", defaultMetricName(name)); !metricNamePattern.MatchString(m.MetricName) || len(m.MetricName) > 200 {
		return fail(&MetadataError{Key: "metricName", Value: m.MetricName, Allowed: "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"})
	}
	if m.Floor, err = p.Enum("floor", FloorTarget, FloorTarget, FloorReplicas); err != nil {
		return fail(err)
	}
	if m.Interval, err = p.Duration("sampleInterval", defaultInterval, 100*time.Millisecond, 10*time.Minute); err != nil {
		return fail(err)
	}
	if m.ActivationWorkingSetTarget, err = p.Float("activationWorkingSetTarget", pressure.DefaultActivationWorkingSetTarget, 0, math.Inf(1)); err != nil {
		return fail(err)
	}
	m.Signal = signal.DefaultOptions()
	if !m.Policy.Replicas() {
		if m.Signal, err = parseSignalOptions(p, m); err != nil {
			return fail(err)
		}
	}
	if m.Source, err = s.parse(kind, p); err != nil {
		return fail(err)
	}
	if err := p.Unknown(); err != nil {
		return fail(err)
	}
	return m, nil
}

// defaultMetricName is barometer-pressure for the pressure signal and
// names the policy otherwise (barometer-fully-elastic), so the HPA's
// metric says what produced it.
func defaultMetricName(policyName string) string {
	if policyName == signal.PolicyPressure {
		return DefaultMetricName
	}
	return "barometer-" + strings.ReplaceAll(policyName, "_", "-")
}

func parseSignalOptions(p *Params, m Metadata) (signal.Options, error) {
	o := signal.DefaultOptions()
	var err error
	if o.MinReplicas, err = p.Int("minReplicas", 0, 0, 10000); err != nil {
		return o, err
	}
	// The target only matters to the floor when there is one; leaving it
	// out otherwise lets ScaledObjects with different targets share a
	// sampler.
	if m.Floor == FloorTarget && o.MinReplicas > 0 {
		o.FloorTarget = m.TargetPressure
	}
	if o.EwmaHalfLife, err = p.Duration("ewmaHalfLife", o.EwmaHalfLife, 0, 24*time.Hour); err != nil {
		return o, err
	}
	if o.ScaleInGateWindow, err = p.Duration("scaleInGateWindow", o.ScaleInGateWindow, 0, 24*time.Hour); err != nil {
		return o, err
	}
	for _, t := range []struct {
		key string
		dst *float64
	}{
		{"activationScaleInThreshold", &o.ActivationScaleInThreshold},
		{"resourceScaleInThreshold", &o.ResourceScaleInThreshold},
		{"walDispatchScaleInThreshold", &o.WalDispatchScaleInThreshold},
	} {
		if *t.dst, err = p.Float(t.key, *t.dst, 0, 1); err != nil {
			return o, err
		}
	}
	if o.SplitAwareScaleIn, err = p.Bool("splitAwareScaleIn", o.SplitAwareScaleIn); err != nil {
		return o, err
	}
	return o, nil
}
