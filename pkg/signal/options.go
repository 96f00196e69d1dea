package signal

import "time"

// Defaults of the computer's options (signal-semantics.md).
const (
	DefaultSampleInterval    = 5 * time.Second
	DefaultEwmaHalfLife      = 30 * time.Second
	DefaultScaleInGateWindow = 2 * time.Minute
	DefaultScaleInThreshold  = 0.25
)

// Options tune the computer. The zero value is not the default: start from
// DefaultOptions.
type Options struct {
	// MinReplicas floors the signal once the first sample lands.
	MinReplicas int
	// FloorTarget, when > 0, is the per-replica target the autoscaler
	// divides ScaleValue by (KEDA's AverageValue). The floor is then
	// MinReplicas x FloorTarget, so the HPA rests at exactly MinReplicas.
	// When 0 the floor is MinReplicas itself, as in the original, which
	// rests the HPA at MinReplicas / target (4 for MinReplicas 2, target 0.5).
	FloorTarget float64
	// EwmaHalfLife is the half-life of the slow-release average; <= 0 turns
	// smoothing off (a falling signal adopts the sample once the gate opens).
	EwmaHalfLife time.Duration
	// ScaleInGateWindow is how long every scale-in precondition must hold
	// before a falling signal is published.
	ScaleInGateWindow time.Duration
	// A dimension at or above its threshold blocks scale-in.
	ActivationScaleInThreshold  float64
	ResourceScaleInThreshold    float64
	WalDispatchScaleInThreshold float64
	// SplitAwareScaleIn holds scale-in while a split is in flight.
	SplitAwareScaleIn bool
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		EwmaHalfLife:                DefaultEwmaHalfLife,
		ScaleInGateWindow:           DefaultScaleInGateWindow,
		ActivationScaleInThreshold:  DefaultScaleInThreshold,
		ResourceScaleInThreshold:    DefaultScaleInThreshold,
		WalDispatchScaleInThreshold: DefaultScaleInThreshold,
		SplitAwareScaleIn:           true,
	}
}

// floor is the lowest ScaleValue the options allow once a sample has landed.
func (o Options) floor() float64 {
	if o.MinReplicas <= 0 {
		return 0
	}
	if o.FloorTarget > 0 {
		return float64(o.MinReplicas) * o.FloorTarget
	}
	return float64(o.MinReplicas)
}
