package signal

import (
	"math"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// Dimension names the compute dimension that dominated a sample.
type Dimension int

// The compute dimensions, in the order that breaks ties.
const (
	Activation Dimension = iota
	Resource
	WalDispatch
)

var dimensionNames = [...]string{"activation", "resource", "wal-dispatch"}

// String returns the dimension as it appears in a Reason.
func (d Dimension) String() string {
	if d < Activation || d > WalDispatch {
		return "unknown"
	}
	return dimensionNames[d]
}

// MarshalText serves the dimension by name.
func (d Dimension) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Parts is a set of the parts of a reason that shaped a signal's value,
// written from the same fields as the reason's words.
type Parts uint8

// The parts, each named in the reason as its comment says.
const (
	PartGate     Parts = 1 << iota // "scale-in held by safety gate"
	PartChurn                      // "scale-in held by churn budget"
	PartSurge                      // "saturation surge"
	PartLead                       // "lead +x"
	PartHeadroom                   // "headroom +x"
	PartForecast                   // "forecast +x"
)

// ReasonWarmingUp is the Reason before the first sample lands.
const ReasonWarmingUp = "warming up"

// PolicyPressure is the Policy of the computer's signals: the pressure
// signal, as opposed to a replica policy a decider applies (pkg/decide).
const PolicyPressure = "pressure"

// Cost is what a target's replicas have used since its sampler started:
// replica-seconds, and those priced at the target's cost per replica-second.
type Cost struct {
	ReplicaSeconds float64
	Cost           float64
}

// ScalingSignal is one published result. A value is never modified after it
// is published, so readers share it freely.
type ScalingSignal struct {
	// ScaleValue is the smoothed, gated, floored replica demand an
	// autoscaler acts on.
	ScaleValue float64
	// RecommendedReplicas is max(MinReplicas, ceil(ScaleValue)).
	RecommendedReplicas int
	Compute             pressure.ComputePressure
	Storage             pressure.StoragePressure
	Reason              string
	// SampledAt is when the sample behind the signal was taken; zero while
	// warming up.
	SampledAt time.Time
	// RawScaleValue is the instantaneous demand, dominant x replicas.
	RawScaleValue float64
	// Forecast is the seasonal forecast of raw demand at the time a
	// replica asked for now will count (Options.Forecast); 0 when the
	// forecast is off or found no season.
	Forecast float64
	// ForecastHistoryPending is set while the forecast reads a source's
	// history (Input.Season) and none has been read yet: a prometheus
	// source reads it within its first hour, and until then the forecast
	// is 0 for want of history, not for want of a season.
	ForecastHistoryPending bool
	// Dominant is the dimension behind RawScaleValue.
	Dominant Dimension
	// Held is set when the gate held a falling signal at its previous value.
	Held bool
	// Parts are the parts of Reason that shaped the value: the holds, the
	// compensation's lead, headroom, forecast and surge.
	Parts Parts
	// ScaleInAllowed reports whether the gate was open at this sample.
	ScaleInAllowed bool
	// SplitInFlight reports whether a split held scale-in at this sample.
	SplitInFlight bool
	// Policy names what decided the signal: PolicyPressure for the
	// computer, otherwise the replica policy of the target's Decider.
	Policy string
	// Action is what the decision did to the replica count (scale_up,
	// scale_down or no-op); empty when nothing audits the decisions.
	Action string
	// Cost is the target's accumulated replica usage; zero when nothing
	// accounts for it.
	Cost Cost
	// MeasuredAt is when the data behind the sample was measured, as the
	// source reports it (pressure.Observation.MeasuredAt: the newest
	// sample of a Prometheus answer, the replicas' answers of a scrape);
	// zero when the source does not say. SampledAt minus MeasuredAt is the
	// data's age: a Prometheus that stopped scraping shows as old data.
	MeasuredAt time.Time
}

// DataAge is how old the data was when sampled; ok is false when the
// source did not say when it was measured.
func (s *ScalingSignal) DataAge() (age time.Duration, ok bool) {
	if s.MeasuredAt.IsZero() || s.SampledAt.IsZero() {
		return 0, false
	}
	return max(s.SampledAt.Sub(s.MeasuredAt), 0), true
}

// WarmingUp reports whether no sample has landed yet.
func (s *ScalingSignal) WarmingUp() bool { return s.SampledAt.IsZero() }

// warmingUp is the signal before the first sample.
func warmingUp(opts Options) ScalingSignal {
	return ScalingSignal{
		RecommendedReplicas: max(opts.MinReplicas, 0),
		Reason:              ReasonWarmingUp,
		Policy:              PolicyPressure,
		Storage:             pressure.StoragePressure{Accounts: []pressure.WalAccountPressure{}},
	}
}

// ReplicasAtTarget is the replica count KEDA's HPA asks for when it divides
// scaleValue by target per replica (an AverageValue metric, compared in
// thousandths as the metric reaches it), and never fewer than minReplicas;
// the HPA's own tolerance and bounds come after. At target 1 it is the
// signal's RecommendedReplicas.
func ReplicasAtTarget(scaleValue, target float64, minReplicas int) int {
	milli := max(math.Round(target*1000), 1) // a target under 0.0005 reaches the HPA as 1m
	if !(target > 0) {
		milli = 1000
	}
	return max(minReplicas, int(math.Ceil(math.Round(scaleValue*1000)/milli)))
}
