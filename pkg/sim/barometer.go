package sim

import (
	"strconv"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// BarometerOptions configure Barometer's controller: the real signal
// computer's options, the KEDA target, and the simulator's optional
// compensations (all off in DefaultBarometerOptions).
type BarometerOptions struct {
	Signal signal.Options
	// Target is the KEDA metrics-api targetValue (AverageValue): KEDA asks
	// for ceil(ScaleValue / Target) replicas. 0 reads at the model's target.
	Target float64
	// Compensation is the optional lag compensation (off by default).
	Compensation Compensation
}

// DefaultBarometerOptions are the signal's defaults, read at the model's
// target occupancy, with no compensation.
func DefaultBarometerOptions() BarometerOptions {
	return BarometerOptions{Signal: signal.DefaultOptions()}
}

// DelayAwareBarometerOptions tune the signal to follow demand: only a
// saturated sample blocks scale-in (resource threshold 1), the gate opens
// on the second eligible sample and the falling signal is not smoothed.
// Demand is still pressure x the replicas it was measured across, so the
// naive rule's over-correction is gone; the lag remains.
func DelayAwareBarometerOptions() BarometerOptions {
	o := DefaultBarometerOptions()
	o.Signal.ResourceScaleInThreshold = 1
	o.Signal.ScaleInGateWindow = 0
	o.Signal.EwmaHalfLife = 0
	return o
}

// BestBarometerOptions is the best documented configuration: the
// delay-aware signal plus every compensation (a lead over the last 6
// samples, 5 % scale-in hysteresis on stale samples, the saturation surge).
func BestBarometerOptions() BarometerOptions {
	o := DelayAwareBarometerOptions()
	o.Compensation = Compensation{TrendWindow: 6, ScaleInHysteresis: 0.05, SaturationSurge: true}
	return o
}

// Barometer drives the real signal computer. Each delivered sample becomes
// an observation of Reading.Replicas replicas, each at the sample's
// occupancy as CPU utilisation; the real compute collector folds it (capping
// utilisation at 1) and the computer turns it into ScaleValue, which already
// carries the replica count the pressure was measured across.
type Barometer struct {
	target    float64
	collector pressure.ComputeCollector
	computer  *signal.Computer
	comp      compensator
	names     []string
}

// NewBarometer returns Barometer's controller.
func NewBarometer(m Model, opts BarometerOptions) *Barometer {
	target := opts.Target
	if target <= 0 {
		target = m.Target
	}
	return &Barometer{
		target:    target,
		collector: pressure.ComputeCollector{ActivationWorkingSetTarget: pressure.DefaultActivationWorkingSetTarget},
		computer:  signal.NewComputer(opts.Signal),
		comp:      compensator{c: opts.Compensation},
	}
}

// Decide folds the delivered sample and reads the signal as KEDA does,
// ceil(ScaleValue / Target), after the optional compensation.
func (b *Barometer) Decide(s State) int {
	sig := b.computer.Compute(s.Now, signal.Input{Compute: b.collector.Collect(b.observation(s.Reading))})
	age := s.Turn - s.Reading.Turn
	measured := max(1, sig.Compute.ReplicaCount)
	saturated := sig.RawScaleValue >= float64(measured)
	demand := b.comp.demand(sig.ScaleValue, sig.RawScaleValue, age)
	return b.comp.replicas(demand, b.target, s.Replicas, measured, age, saturated)
}

func (b *Barometer) observation(r Reading) pressure.Observation {
	for len(b.names) < r.Replicas {
		b.names = append(b.names, "replica-"+strconv.Itoa(len(b.names)))
	}
	obs := pressure.Observation{Replicas: make([]pressure.ReplicaObservation, r.Replicas)}
	for i := range obs.Replicas {
		obs.Replicas[i] = pressure.ReplicaObservation{Name: b.names[i], CPUUtilisation: r.Occupancy}
	}
	return obs
}
