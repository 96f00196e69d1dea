package target

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/target/decide"
)

// PolicyNames are the values of the `policy` key: the pressure signal
// first (the default), then pkg/policy's replica policies.
func PolicyNames() []string { return append([]string{signal.PolicyPressure}, policy.Names()...) }

var (
	elasticPolicies = []string{policy.PolicyFixed, policy.PolicyFullyElastic, policy.PolicyMaxCount, policy.PolicyPoolWithThreshold}
	replicaPolicies = policy.Names()
	bounded         = []string{policy.PolicyQueue, policy.PolicyFullyElastic, policy.PolicyMaxCount, policy.PolicyPoolWithThreshold}
	onlyPressure    = []string{signal.PolicyPressure}
	onlyQueue       = []string{policy.PolicyQueue}
	onlyThreshold   = []string{policy.PolicyPoolWithThreshold}
)

// policyKeys lists, for every key that not all policies read, the policies
// that read it. A key set for another policy is refused rather than
// ignored: a setting with no effect is a mistake worth reporting.
var policyKeys = map[string][]string{
	"targetPressure":              onlyPressure,
	"floor":                       onlyPressure,
	"ewmaHalfLife":                onlyPressure,
	"scaleInGateWindow":           onlyPressure,
	"activationScaleInThreshold":  onlyPressure,
	"resourceScaleInThreshold":    onlyPressure,
	"walDispatchScaleInThreshold": onlyPressure,
	"splitAwareScaleIn":           onlyPressure,
	"minReplicas":                 append([]string{signal.PolicyPressure}, bounded...),
	"maxReplicas":                 bounded,
	"ewmaAlpha":                   onlyQueue,
	"defaultServiceTime":          onlyQueue,
	"targetUtilization":           onlyQueue,
	"rateCutoff":                  onlyQueue,
	"drainTime":                   onlyQueue,
	"sloClasses":                  onlyQueue,
	"reservationHorizon":          onlyQueue,
	"maxStepUpRatio":              onlyQueue,
	"maxStepUp":                   onlyQueue,
	"stabilizationWindow":         onlyQueue,
	"maxStepDown":                 onlyQueue,
	"scaleDownCooldown":           onlyQueue,
	"threshold":                   onlyThreshold,
	"thresholdLow":                onlyThreshold,
	"ticks":                       onlyThreshold,
	"slotsPerReplica":             bounded,
	"launchTTL":                   replicaPolicies,
	"pool":                        elasticPolicies,
}

// optionKeys maps pkg/policy's option fields to the keys that set them, so
// an *policy.OptionError is reported against the key the user wrote.
var optionKeys = map[string]string{
	// QueueOptions
	"EwmaAlpha": "ewmaAlpha", "DefaultServiceTime": "defaultServiceTime", "TargetUtilization": "targetUtilization",
	"RateCutoff": "rateCutoff", "DrainTime": "drainTime", "Classes": "sloClasses", "ReservationHorizon": "reservationHorizon",
	"MinReplicas": "minReplicas", "MaxReplicas": "maxReplicas", "MaxStepUpRatio": "maxStepUpRatio", "MaxStepUpAbs": "maxStepUp",
	"StabilizationWindow": "stabilizationWindow", "MaxStepDown": "maxStepDown", "ScaleDownCooldown": "scaleDownCooldown",
	"SlotsPerReplica": "slotsPerReplica", // and ElasticityOptions
	// ElasticityOptions
	"Min": "minReplicas", "Max": "maxReplicas", "High": "threshold", "Low": "thresholdLow", "Ticks": "ticks",
	// LaunchOptions, CostOptions
	"TTL": "launchTTL", "PerReplicaSecond": "costPerReplicaSecond",
}

var poolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9._/]*[a-zA-Z0-9])?$`)

// checkPolicyKeys refuses a key the chosen policy does not read. Keys are
// checked in sorted order, so the error is the same on every call.
func checkPolicyKeys(p *Params, name string) error {
	for _, key := range slices.Sorted(maps.Keys(policyKeys)) {
		allowed := policyKeys[key]
		if v, ok := p.Lookup(key); ok && !slices.Contains(allowed, name) {
			what := "policy " + allowed[0]
			if len(allowed) > 1 {
				what = "policies " + strings.Join(allowed, ", ")
			}
			return &MetadataError{Key: key, Value: v, Allowed: fmt.Sprintf("only for %s (this trigger's policy is %s)", what, name)}
		}
	}
	return nil
}

// parsePolicy reads the policy's own keys into a validated spec (the
// pressure signal's options are parseSignalOptions'). Values are read for
// their syntax only; their ranges are pkg/policy's, whose errors come back
// under the key's name.
func parsePolicy(p *Params, name string) (decide.Spec, error) {
	s := decide.Spec{Policy: name, LaunchTTL: policy.DefaultLaunchTTL}
	var err error
	if s.CostPerReplicaSecond, err = number(p, "costPerReplicaSecond", 0); err != nil {
		return s, err
	}
	if err := optionError(policy.CostOptions{PerReplicaSecond: s.CostPerReplicaSecond}.Validate()); err != nil {
		return s, err
	}
	switch {
	case name == signal.PolicyPressure:
		return s, nil
	case name == policy.PolicyQueue:
		if s.Queue, err = parseQueue(p); err != nil {
			return s, err
		}
	default:
		if s.Elasticity, err = parseElasticity(p, name); err != nil {
			return s, err
		}
		if s.Pool = p.String("pool", ""); s.Pool != "" && (!poolNamePattern.MatchString(s.Pool) || len(s.Pool) > 200) {
			return s, &MetadataError{Key: "pool", Value: s.Pool, Allowed: "a name of letters, digits, '-', '.', '_' and '/', starting and ending with a letter or digit"}
		}
	}
	if s.LaunchTTL, err = duration(p, "launchTTL", s.LaunchTTL); err != nil {
		return s, err
	}
	return s, optionError(policy.LaunchOptions{TTL: s.LaunchTTL}.Validate())
}

func parseQueue(p *Params) (policy.QueueOptions, error) {
	o := policy.DefaultQueueOptions()
	floats := []struct {
		key string
		dst *float64
	}{
		{"ewmaAlpha", &o.EwmaAlpha}, {"targetUtilization", &o.TargetUtilization},
		{"rateCutoff", &o.RateCutoff}, {"maxStepUpRatio", &o.MaxStepUpRatio},
	}
	for _, f := range floats {
		v, err := number(p, f.key, *f.dst)
		if err != nil {
			return o, err
		}
		*f.dst = v
	}
	durations := []struct {
		key string
		dst *time.Duration
	}{
		{"defaultServiceTime", &o.DefaultServiceTime}, {"drainTime", &o.DrainTime},
		{"reservationHorizon", &o.ReservationHorizon}, {"stabilizationWindow", &o.StabilizationWindow},
		{"scaleDownCooldown", &o.ScaleDownCooldown},
	}
	for _, d := range durations {
		v, err := duration(p, d.key, *d.dst)
		if err != nil {
			return o, err
		}
		*d.dst = v
	}
	ints := []struct {
		key string
		dst *int
	}{
		{"minReplicas", &o.MinReplicas}, {"maxReplicas", &o.MaxReplicas},
		{"maxStepUp", &o.MaxStepUpAbs}, {"maxStepDown", &o.MaxStepDown},
	}
	for _, n := range ints {
		v, err := whole(p, n.key, *n.dst)
		if err != nil {
			return o, err
		}
		*n.dst = v
	}
	var err error
	if o.SlotsPerReplica, err = slotsPerReplica(p); err != nil {
		return o, err
	}
	if raw, ok := p.Lookup("sloClasses"); ok {
		cs, err := parseClasses(raw)
		if err != nil {
			return o, err
		}
		o.Classes = cs
	}
	return o, optionError(o.Validate())
}

// parseClasses reads SLO classes written highest priority first as
// "name[=slo],...", for example "critical=5s,high=30s,normal,low": a class
// without "=slo" has none. Names (empty, repeated) are checked by
// QueueOptions.Validate.
func parseClasses(s string) ([]policy.Class, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var cs []policy.Class
	for part := range strings.SplitSeq(s, ",") {
		name, slo, hasSLO := strings.Cut(strings.TrimSpace(part), "=")
		c := policy.Class{Name: strings.TrimSpace(name)}
		if hasSLO {
			d, err := time.ParseDuration(strings.TrimSpace(slo))
			if err != nil || d <= 0 {
				return nil, &MetadataError{Key: "sloClasses", Value: strings.TrimSpace(part), Allowed: `name=duration with a duration > 0, e.g. "critical=5s"`}
			}
			c.SLO = d
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func parseElasticity(p *Params, name string) (policy.ElasticityOptions, error) {
	o := policy.DefaultElasticityOptions(name)
	var err error
	if o.Min, err = whole(p, "minReplicas", o.Min); err != nil {
		return o, err
	}
	if o.Max, err = whole(p, "maxReplicas", o.Max); err != nil {
		return o, err
	}
	if o.High, err = number(p, "threshold", o.High); err != nil {
		return o, err
	}
	if o.Low, err = number(p, "thresholdLow", o.Low); err != nil {
		return o, err
	}
	if o.Ticks, err = whole(p, "ticks", o.Ticks); err != nil {
		return o, err
	}
	if o.SlotsPerReplica, err = slotsPerReplica(p); err != nil {
		return o, err
	}
	return o, optionError(o.Validate())
}

// slotsPerReplica reads the slotsPerReplica key, at least 1 (the options
// read 0 as 1; a trigger must not say 0 and mean it).
func slotsPerReplica(p *Params) (int, error) {
	v, err := whole(p, "slotsPerReplica", 1)
	if err == nil && v < 1 {
		err = &MetadataError{Key: "slotsPerReplica", Value: strconv.Itoa(v), Allowed: "an integer >= 1"}
	}
	return v, err
}

// optionError renames an *policy.OptionError's field to its metadata key.
func optionError(err error) error {
	var oe *policy.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	key, ok := optionKeys[oe.Field]
	if !ok {
		key = oe.Field // unreachable while optionKeys covers every field
	}
	return &MetadataError{Key: key, Value: strings.Trim(oe.Value, `"`), Allowed: oe.Allowed}
}

// number, whole and duration read a value's syntax; the range is checked
// by the options' Validate.

func number(p *Params, key string, def float64) (float64, error) {
	s, ok := p.Lookup(key)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, &MetadataError{Key: key, Value: s, Allowed: "a number"}
	}
	return v, nil
}

func whole(p *Params, key string, def int) (int, error) {
	s, ok := p.Lookup(key)
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, &MetadataError{Key: key, Value: s, Allowed: "a whole number"}
	}
	return v, nil
}

func duration(p *Params, key string, def time.Duration) (time.Duration, error) {
	s, ok := p.Lookup(key)
	if !ok {
		return def, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, &MetadataError{Key: key, Value: s, Allowed: "a duration such as 30s or 2m"}
	}
	return v, nil
}
