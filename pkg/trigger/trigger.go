package trigger

import (
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// Trigger is one ScaledObject trigger's scalerMetadata, parsed once: every
// default resolved and every range checked. It is never modified after
// Parse returns it, so one Trigger may be shared by every call that carries
// the same metadata.
//
// A Trigger is its Spec, what its target samples with, and the keys only
// its own reads use. Triggers of one identity share a target, which keeps
// a Spec and nothing else: a surface reaches the read-side keys only
// through the ScaledObject's own Trigger (registry.Served).
type Trigger struct {
	*Spec
	// TargetPressure is the per-replica target sent as targetSizeFloat:
	// the targetPressure key for the pressure signal, and 1 for a policy
	// whose signal is a replica count, so the HPA asks for exactly that
	// count (AverageValue: ceil(count / 1)).
	TargetPressure float64
	// ActivationValue: IsActive when ScaleValue exceeds it.
	ActivationValue float64
	// MetricName is the metric's name on the KEDA side.
	MetricName string
}

// Reader is what a trigger's reads divide the signal by: the per-replica
// target KEDA asks at, and the floor of the count.
type Reader struct {
	TargetPressure float64
	MinReplicas    int
}

// Reader is the trigger's: its target and minReplicas.
func (t *Trigger) Reader() Reader {
	return Reader{TargetPressure: t.TargetPressure, MinReplicas: t.Signal.MinReplicas}
}

// Replicas is what KEDA's HPA asks for at the reader's target
// (signal.ReplicasAtTarget): the one replica count every surface shows.
func (r Reader) Replicas(scaleValue float64) int {
	return signal.ReplicasAtTarget(scaleValue, r.TargetPressure, r.MinReplicas)
}

// Spec is what a target samples with: the keys that enter the trigger's
// identity. Triggers with equal identities have equal Specs.
type Spec struct {
	// SourceKind is the `source` key; Source is its parsed configuration.
	SourceKind string
	Source     sourcekind.Spec
	// Policy is the `policy` key and the keys that tune it.
	Policy PolicySpec
	// Profile is the pressure signal's profile (signal.ProfileNames), ""
	// for a replica policy; Signal holds what it means.
	Profile string
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

// Identity is the sampler identity: the source kind and a hash of the
// source's key and every sampled key's canonical value
// ("prometheus@1a2b3c4d5e6f7a8b"). Triggers with equal identities share
// one sampler. It is short and bounded, for logs, listings and a metric
// label; the source's key (SourceKey) says what it reads.
func (s *Spec) Identity() string { return s.identity }

// ShortID names the sampler in logs: the identity with the first 8 hex
// digits of its hash ("prometheus@1a2b3c4d").
func (s *Spec) ShortID() string { return s.shortID }

// SourceKey is the source's key (Source.Key()), computed once.
func (s *Spec) SourceKey() string { return s.sourceKey }

// PoolKey is what every member of a pool must agree on: the policy keys
// (cost and the pool's name aside) and the sample interval.
func (s *Spec) PoolKey() string { return s.poolKey }

// SamplerOptions are the signal options the sampler runs with. A replica
// policy never reads the split gate, so its sampler skips the split probe.
func (s *Spec) SamplerOptions() signal.Options {
	opts := s.Signal
	if s.Policy.Replicas() {
		opts.SplitAwareScaleIn = false
	}
	return opts
}

// VictimHints reports whether the source asks for victim hints and the
// namespace of the pods they rank (scrape.Kind's specs can).
func (s *Spec) VictimHints() (namespace string, on bool) {
	if h, ok := s.Source.(interface{ VictimHints() (string, bool) }); ok {
		return h.VictimHints()
	}
	return "", false
}

// PolicySpec is a trigger's policy configuration, validated: the `policy`
// key, the chosen replica policy's options, and the engine's bookkeeping
// keys.
type PolicySpec struct {
	// Name is signal.PolicyPressure or a replica policy's kind name.
	Name string
	// Kind is the replica policy's kind and Options its parsed keys; both
	// zero for the pressure signal.
	Kind    policy.Kind
	Options policy.Spec
	// LaunchTTL is how long a scale-up or scale-down counts as in flight
	// (not pressure, whose demand is measured, never asked for).
	LaunchTTL time.Duration
	// CostPerReplicaSecond prices the target's replica-seconds.
	CostPerReplicaSecond float64
	// Pool names the pool a poolable policy's target is decided in; ""
	// for none.
	Pool string
}

// Replicas reports whether the policy's signal is a replica count, which
// KEDA reads with target 1, rather than pressure in replica units.
func (s PolicySpec) Replicas() bool { return s.Options != nil }
