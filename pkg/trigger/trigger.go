package trigger

import (
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// Trigger is a ScaledObject trigger's scalerMetadata, parsed once: every
// default resolved and every range checked. It is never modified after
// Parse returns it, so one Trigger may be shared by every call that carries
// the same metadata.
type Trigger struct {
	// SourceKind is the `source` key; Source is its parsed configuration.
	SourceKind string
	Source     sourcekind.Spec
	// Policy is the `policy` key and the keys that tune it.
	Policy PolicySpec
	// Profile is the pressure signal's profile (signal.ProfileNames), ""
	// for a replica policy; Signal holds what it means.
	Profile string
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

	identity  string
	shortID   string
	sourceKey string
	poolKey   string
}

// Identity is the trigger's sampler identity: the source's key and a short
// hash of every sampled key's canonical value. Triggers with equal
// identities mean the same sampling and share one sampler; read-side keys
// (the target, the activation value, the metric's name) do not enter it.
// It stays short enough for a metric label.
func (t *Trigger) Identity() string { return t.identity }

// ShortID names the trigger's sampler in logs: the source kind and the
// first 8 hex digits of the identity's hash ("prometheus@1a2b3c4d"), a
// prefix of the hash that ends Identity, never the source's whole key (a
// prometheus trigger's is every query, thousands of bytes).
func (t *Trigger) ShortID() string { return t.shortID }

// SourceKey is the source's key (Source.Key()), computed once.
func (t *Trigger) SourceKey() string { return t.sourceKey }

// PoolKey is what every member of the trigger's pool must agree on: the
// policy keys (cost and the pool's name aside) and the sample interval.
func (t *Trigger) PoolKey() string { return t.poolKey }

// SamplerOptions are the signal options the sampler runs with. A replica
// policy never reads the split gate, so its sampler skips the split probe
// (the options stay in the trigger, and so in its identity, unchanged).
func (t *Trigger) SamplerOptions() signal.Options {
	opts := t.Signal
	if t.Policy.Replicas() {
		opts.SplitAwareScaleIn = false
	}
	return opts
}

// VictimHints reports whether the trigger asks for victim hints
// (victimHints), and the namespace of the pods they rank: a source spec
// that can (scrape.Kind's) has a method of the
// same name and result.
func (t *Trigger) VictimHints() (namespace string, on bool) {
	if h, ok := t.Source.(interface{ VictimHints() (string, bool) }); ok {
		return h.VictimHints()
	}
	return "", false
}

// PolicySpec is a trigger's policy configuration, validated: the `policy`
// key and the keys that tune it.
type PolicySpec struct {
	// Name is signal.PolicyPressure or one of policy.Names().
	Name string
	// Queue tunes the queue policy; zero for the others.
	Queue policy.QueueOptions
	// Elasticity tunes the elasticity policies; zero for the others.
	Elasticity policy.ElasticityOptions
	// LaunchTTL is how long a scale-up or scale-down counts as in flight
	// (not pressure, whose demand is measured, never asked for).
	LaunchTTL time.Duration
	// CostPerReplicaSecond prices the target's replica-seconds.
	CostPerReplicaSecond float64
	// Pool names the pool an elasticity target is decided in; "" for none.
	Pool string
}

// Replicas reports whether the policy's signal is a replica count, which
// KEDA reads with target 1, rather than pressure in replica units.
func (s PolicySpec) Replicas() bool { return s.Name != signal.PolicyPressure }

// Elastic reports whether the policy is one of the elasticity policies.
func (s PolicySpec) Elastic() bool {
	return s.Name != signal.PolicyPressure && s.Name != policy.PolicyQueue
}
