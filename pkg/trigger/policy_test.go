package trigger

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

func parse(raw map[string]string) (*Trigger, error) {
	return testSources().Parse(raw, 5*time.Second)
}

func withPolicy(name string, kv ...string) map[string]string {
	raw := map[string]string{"source": "const", "policy": name}
	for i := 0; i+1 < len(kv); i += 2 {
		raw[kv[i]] = kv[i+1]
	}
	return raw
}

// wantKeyError asserts a *keyschema.MetadataError on key whose text mentions each of
// wants.
func wantKeyError(t *testing.T, err error, key string, wants ...string) {
	t.Helper()
	var me *keyschema.MetadataError
	if !errors.As(err, &me) || me.Key != key {
		t.Fatalf("err = %v, want a MetadataError on %s", err, key)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v does not mention %q", err, w)
		}
	}
}

// settingOf is the value in force of key for metadata raw.
func settingOf(t *testing.T, raw map[string]string, key string) Setting {
	t.Helper()
	settings, err := testSources().Settings("", raw, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(settings, func(s Setting) bool { return s.Key == key })
	if i < 0 {
		t.Fatalf("%v: no setting %s", raw, key)
	}
	return settings[i]
}

func TestPolicyDefaults(t *testing.T) {
	tests := []struct {
		policy     string
		metricName string
		target     float64
	}{
		{"", "barometer-pressure", 0.7},
		{"pressure", "barometer-pressure", 0.7},
		{"queue", "barometer-queue", 1},
		{"fixed", "barometer-fixed", 1},
		{"fully_elastic", "barometer-fully-elastic", 1},
		{"max_count", "barometer-max-count", 1},
		{"pool_with_threshold", "barometer-pool-with-threshold", 1},
	}
	for _, c := range tests {
		raw := withPolicy(c.policy)
		if c.policy == "" {
			delete(raw, "policy")
		}
		md, err := parse(raw)
		if err != nil {
			t.Fatalf("%q: %v", c.policy, err)
		}
		name, kind := cmp.Or(c.policy, "pressure"), c.policy
		if kind == "pressure" {
			kind = ""
		}
		p := md.Policy
		if p.Name != name || p.Kind.Name != kind || p.Replicas() != (kind != "") ||
			p.LaunchTTL != 15*time.Second || p.Pool != "" || p.CostPerReplicaSecond != 0 || md.MetricName != c.metricName || md.TargetPressure != c.target {
			t.Errorf("%q: spec %+v metric %q target %v", c.policy, p, md.MetricName, md.TargetPressure)
		}
	}
	if s := settingOf(t, withPolicy("max_count"), "maxReplicas"); s.Value != "0" || s.Origin != "default" {
		t.Errorf("max_count maxReplicas %+v, want the default 0", s)
	}
	if s := settingOf(t, withPolicy("fully_elastic"), "maxReplicas"); s.Value != "unbounded" {
		t.Errorf("fully_elastic maxReplicas %+v, want unbounded", s)
	}
}

// Every key reaches what reads it: the bookkeeping keys the trigger's
// PolicySpec, a policy's own keys its kind (the value in force is the one
// given; pkg/policy's TestKindKeysSetTheirOptions checks the options).
func TestPolicyKeysSetTheirOptions(t *testing.T) {
	tests := []struct {
		policy, key, value string
		got                func(PolicySpec) any // nil: a key of the policy's kind
		want               any
	}{
		{"queue", "ewmaAlpha", "0.5", nil, "0.5"},
		{"queue", "sloClasses", "critical=5s, normal", nil, "critical=5s,normal"},
		{"queue", "minReplicas", "2", nil, "2"},
		{"queue", "maxReplicas", "9", nil, "9"},
		{"fully_elastic", "slotsPerReplica", "8", nil, "8"},
		{"max_count", "maxReplicas", "7", nil, "7"},
		{"pool_with_threshold", "ticks", "3", nil, "3"},
		{"queue", "launchTTL", "1m", func(s PolicySpec) any { return s.LaunchTTL }, time.Minute},
		{"queue", "costPerReplicaSecond", "0.25", func(s PolicySpec) any { return s.CostPerReplicaSecond }, 0.25},
		{"fixed", "launchTTL", "5s", func(s PolicySpec) any { return s.LaunchTTL }, 5 * time.Second},
		{"fixed", "pool", "shop.workers", func(s PolicySpec) any { return s.Pool }, "shop.workers"},
		{"max_count", "pool", "gpu/a-1", func(s PolicySpec) any { return s.Pool }, "gpu/a-1"},
		{"pressure", "costPerReplicaSecond", "1e-4", func(s PolicySpec) any { return s.CostPerReplicaSecond }, 1e-4},
	}
	for _, c := range tests {
		raw := withPolicy(c.policy, c.key, c.value)
		md, err := parse(raw)
		if err != nil {
			t.Errorf("%s %s=%s: %v", c.policy, c.key, c.value, err)
			continue
		}
		if c.got == nil {
			if s := settingOf(t, raw, c.key); s.Value != c.want || s.Origin != "metadata" {
				t.Errorf("%s %s=%s: in force %+v, want %v", c.policy, c.key, c.value, s, c.want)
			}
			continue
		}
		if got := c.got(md.Policy); got != c.want {
			t.Errorf("%s %s=%s: got %v, want %v", c.policy, c.key, c.value, got, c.want)
		}
	}
}

// A key the chosen policy does not read is refused, naming the policies
// that read it.
func TestKeysOfAnotherPolicyAreRefused(t *testing.T) {
	policyKeys := map[string][]string{}
	for _, k := range testSources().Keys() {
		if k.Policies != nil {
			policyKeys[k.Name] = k.Policies
		}
	}
	for _, key := range slices.Sorted(maps.Keys(policyKeys)) {
		for _, name := range PolicyNames() {
			if slices.Contains(policyKeys[key], name) {
				continue
			}
			_, err := parse(withPolicy(name, key, "1"))
			wantKeyError(t, err, key, "only for polic", policyKeys[key][0], "this trigger's policy is "+name)
		}
	}
	_, err := parse(withPolicy("fixed", "maxReplicas", "3"))
	wantKeyError(t, err, "maxReplicas", "only for policies queue, fully_elastic, max_count, pool_with_threshold")
	_, err = parse(map[string]string{"threshold": "0.5"})
	wantKeyError(t, err, "threshold", "only for policy pool_with_threshold (this trigger's policy is pressure)")
}

func TestUnknownPolicyNamesTheAllowedOnes(t *testing.T) {
	_, err := parse(withPolicy("elastic"))
	wantKeyError(t, err, "policy", `"elastic"`, "pressure, queue, fixed, fully_elastic, max_count, pool_with_threshold")
}

// Ranges are pkg/policy's; its *OptionError comes back under the key.
func TestOptionErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		policy, key, value, allowed string
	}{
		{"queue", "ewmaAlpha", "0", "(0, 1]"},
		{"queue", "ewmaAlpha", "x", "a number"},
		{"queue", "defaultServiceTime", "0s", "> 0"},
		{"queue", "defaultServiceTime", "soon", "a duration"},
		{"queue", "targetUtilization", "1.5", "(0, 1]"},
		{"queue", "rateCutoff", "-1", "[0, inf)"},
		{"queue", "drainTime", "-5s", "> 0"},
		{"queue", "sloClasses", "critical=fast", "name=duration"},
		{"queue", "sloClasses", "a=0s", "name=duration"},
		{"queue", "sloClasses", "a,,b", "class names must not be empty"},
		{"queue", "sloClasses", "a=-1s", "name=duration"},
		{"queue", "sloClasses", "a,a", "each class listed once"},
		{"queue", "reservationHorizon", "-1s", ">= 0"},
		{"queue", "minReplicas", "-1", ">= 0"},
		{"queue", "minReplicas", "two", "a whole number"},
		{"queue", "maxStepUpRatio", "-0.5", "[0, inf)"},
		{"queue", "maxStepUp", "0", ">= 1"},
		{"queue", "stabilizationWindow", "-1s", ">= 0"},
		{"queue", "maxStepDown", "0", ">= 1"},
		{"queue", "scaleDownCooldown", "-1s", ">= 0"},
		{"queue", "launchTTL", "0s", "> 0"},
		{"queue", "costPerReplicaSecond", "-1", "[0, inf)"},
		{"pressure", "costPerReplicaSecond", "NaN", "a number"},
		// The price is a finite number: an overflowing one (1e400 reads as
		// +Inf) would make the cost Inf, which JSON cannot carry.
		{"pressure", "costPerReplicaSecond", "Inf", "a number"},
		{"fixed", "costPerReplicaSecond", "1e400", "a number"},
		{"queue", "slotsPerReplica", "0", ">= 1"},
		{"max_count", "slotsPerReplica", "1.5", "a whole number"},
		{"pool_with_threshold", "slotsPerReplica", "-2", ">= 1"},
		{"fully_elastic", "minReplicas", "-2", ">= 0"},
		{"max_count", "maxReplicas", "-1", ">= 0"},
		{"pool_with_threshold", "threshold", "0", "(0, 1]"},
		{"pool_with_threshold", "thresholdLow", "0.9", "[0, 0.8]"},
		{"pool_with_threshold", "ticks", "0", ">= 1"},
		{"fixed", "pool", "-bad", "letters, digits"},
	}
	for _, c := range tests {
		_, err := parse(withPolicy(c.policy, c.key, c.value))
		wantKeyError(t, err, c.key, c.allowed)
	}
	// A bound that depends on another key names the one that breaks it.
	_, err := parse(withPolicy("queue", "minReplicas", "5", "maxReplicas", "3"))
	wantKeyError(t, err, "maxReplicas", ">= 5")
	if _, err := parse(withPolicy("fully_elastic", "minReplicas", "5", "maxReplicas", "3")); err != nil {
		t.Errorf("elasticity allows min above max (the minimum wins): %v", err)
	}
}

// The policy splits samplers: a policy's state is the target's.
func TestSamplerKeyIncludesThePolicy(t *testing.T) {
	keys := map[string]bool{}
	for _, raw := range []map[string]string{
		{"source": "const"},
		{"source": "const", "costPerReplicaSecond": "1"},
		withPolicy("queue"),
		withPolicy("queue", "drainTime", "1m"),
		withPolicy("fixed"),
		withPolicy("fixed", "pool", "p"),
		withPolicy("fully_elastic"),
		withPolicy("pool_with_threshold", "ticks", "3"),
	} {
		md, err := parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if keys[md.Identity()] {
			t.Errorf("%v shares a sampler key with another policy", raw)
		}
		keys[md.Identity()] = true
	}
	a, _ := parse(withPolicy("queue", "activationValue", "2", "metricName", "jobs"))
	b, _ := parse(withPolicy("queue"))
	if a.Identity() != b.Identity() {
		t.Error("read-side keys split a policy's sampler")
	}
	if !a.Policy.Replicas() || b.Policy.Name != "queue" || a.Signal != signal.DefaultOptions() {
		t.Errorf("queue metadata %+v", a)
	}
}
