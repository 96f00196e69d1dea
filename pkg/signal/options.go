package signal

import (
	"time"
)

// Defaults of the computer's options (docs/semantics.md, "Defaults: the
// `original` profile").
const (
	DefaultSampleInterval    = 5 * time.Second
	DefaultEwmaHalfLife      = 30 * time.Second
	DefaultScaleInGateWindow = 2 * time.Minute
	DefaultScaleInThreshold  = 0.25
)

// MaxReplicaStartup bounds the start-up the lag counts: the replicaStartup
// key's range, and each measured start-up (a replica that stayed not ready
// for longer was stuck, not starting, and its wait says nothing about the
// next replica's).
const MaxReplicaStartup = time.Hour

// Defaults of the compensation options when a profile turns them on
// (docs/compensation.md explains each).
const (
	// DefaultLeadWindow is how many samples the lead's trend is read from.
	DefaultLeadWindow = 7
	// DefaultLeadSignificance is the Mann-Kendall z the trend's window must
	// reach before it leads: about a 2 % chance per sample on noise alone.
	DefaultLeadSignificance = 2.0
	// DefaultScaleInHysteresis is the margin a stale sample's scale-in
	// keeps (5 %).
	DefaultScaleInHysteresis = 0.05
	// DefaultScaleInNoiseMargin is the noise widths a stale sample's
	// scale-in keeps as its margin on noisy demand.
	DefaultScaleInNoiseMargin = 2.5
	// DefaultSurgeLevel is the dominant pressure at which a sample counts
	// as saturated: the collector's cap.
	DefaultSurgeLevel = 1.0
	// DefaultShortfallBudget is the budgeted profile's shortfall budget,
	// 2.5 %: of 2 %, 2.5 % and 3 %, the largest that kept every real trace
	// of the decision-quality report at or under 3 % of its turns short at
	// metric delay 3 (3 % let a load balancer's spiky trace reach 3.1 %;
	// docs/decision-quality.md).
	DefaultShortfallBudget = 0.025
	// DefaultScaleInHold is the longest the budgeted profile's churn
	// budget keeps a surplus: the HPA's default scale-down stabilization,
	// 5 minutes.
	DefaultScaleInHold = 5 * time.Minute
	// DefaultChangeCost is the budgeted profile's price of a change, in
	// replica-seconds: one replica for the HPA's default scale-down
	// stabilization, so that a surplus of one replica is kept as long as
	// the HPA keeps it, and a larger one for less (docs/compensation.md,
	// "The churn budget").
	DefaultChangeCost = 600.0
	// MaxChangeCost bounds ChangeCost: a thousand replicas for a day.
	MaxChangeCost = 1000 * 86400.0
)

// Options tune the computer. The zero value is not the default: start from
// DefaultOptions or ProfileOptions. The ranges below are the trigger
// keys' (pkg/trigger declares them, and parses every key against them).
type Options struct {
	// MinReplicas floors the signal once the first sample lands.
	// Default 0; range 0..10000.
	MinReplicas int
	// FloorTarget, when > 0, is the per-replica target the autoscaler
	// divides ScaleValue by (KEDA's AverageValue). The floor is then
	// MinReplicas x FloorTarget, so the HPA rests at exactly MinReplicas.
	// When 0 the floor is MinReplicas itself, as the signal first read it
	// (docs/semantics.md, "The floor"), which rests the HPA at
	// MinReplicas / target (4 for MinReplicas 2, target 0.5).
	// Default 0; range >= 0.
	FloorTarget float64
	// EwmaHalfLife is the half-life of the slow-release average; 0 turns
	// smoothing off (a falling signal adopts the sample once the gate opens).
	// Default 30s; range 0..24h.
	EwmaHalfLife time.Duration
	// ScaleInGateWindow is how long every scale-in precondition must hold
	// before a falling signal is published. Default 2m; range 0..24h.
	ScaleInGateWindow time.Duration
	// A dimension at or above its threshold blocks scale-in.
	// Default 0.25 each; range 0..1.
	ActivationScaleInThreshold  float64
	ResourceScaleInThreshold    float64
	WalDispatchScaleInThreshold float64
	// SplitAwareScaleIn holds scale-in while a split is in flight.
	// Default true.
	SplitAwareScaleIn bool

	// The compensation for the pipeline's lag (docs/compensation.md). All
	// of it is off in DefaultOptions, the original profile.

	// ReplicaStartup is how long a replica the autoscaler adds takes to
	// count: its start-up plus readiness, plus any delay the source does
	// not report (see Input.MeasuredAt). A sample's lag is its age
	// (now - MeasuredAt) plus this, or plus the start-up the sampler
	// measured (Input.MeasuredStartup) when that is longer; the lead
	// forecasts that far ahead, and a sample with a lag > 0 is stale.
	// Default 0; range 0..1h.
	ReplicaStartup time.Duration
	// LeadWindow is how many distinct samples of raw demand the lead reads
	// its trend and noise from; 0 turns the lead (and the noise margin)
	// off. Default 0 (responsive: 7); range 0 or 3..16.
	LeadWindow int
	// LeadSignificance is how significant the window's rise must be
	// before it leads: the Mann-Kendall z of its samples (rises less
	// falls among all pairs, in standard deviations of that count on
	// noise alone), which counts signs, not sizes, so heavy noise and
	// outliers do not fool it. Below it a rise is noise and adds nothing.
	// 0 reads as DefaultLeadSignificance. Default 2; range 0..10.
	LeadSignificance float64
	// ScaleInHysteresis is the margin a stale sample's scale-in keeps: a
	// falling signal falls only to demand x (1 + ScaleInHysteresis), and
	// never above the value published before. 0 turns it off.
	// Default 0 (responsive: 0.05); range 0..1.
	ScaleInHysteresis float64
	// ScaleInNoiseMargin widens that margin on noisy demand: a stale
	// sample's falling signal falls only to demand + this many widths of
	// the noise the lead's window measured (when that is more than the
	// ScaleInHysteresis margin), so a noisy plateau does not move the
	// count up and down. It needs LeadWindow; 0 turns it off.
	// Default 0 (responsive: 2.5); range 0..10.
	ScaleInNoiseMargin float64
	// SaturationSurge turns on the surge: a sample whose dominant pressure
	// is at least SurgeLevel across n replicas publishes at least what
	// asks the autoscaler for 2n replicas, and n + 4 when that is more and
	// the sample is stale (the HPA's default scale-up policies); a later
	// saturated sample across a larger pool multiplies that factor by the
	// pool's growth, and a saturated sample asks for at least the replicas
	// the working set measures where the source reports one
	// (pressure.ComputePressure.WorkingSetDemand; docs/compensation.md,
	// "The saturation surge"). It holds its high-water mark while the
	// samples stay saturated and ends at the first sample clearly below
	// SurgeLevel (under 90 % of it). Default false (responsive: true).
	SaturationSurge bool
	// SurgeLevel is the dominant pressure at or above which a sample is
	// saturated; 0 reads as DefaultSurgeLevel. Default 1; range 0..1.
	SurgeLevel float64
	// SurgeTarget is the per-replica target the autoscaler divides
	// ScaleValue by, which the surge needs to ask for a replica count
	// (the trigger's target value); 0 reads as 1, which asks for at least
	// 2n replicas at any target <= 1. Default 0; range >= 0.
	SurgeTarget float64
	// ShortfallBudget is the share of samples in which the demand may
	// outgrow what the signal provisions for: the signal provisions for
	// the recent level plus a headroom in widths of the recent spread,
	// fed back from the samples (one whose dominant pressure is above
	// SurgeTarget saw the pool short) so that it settles where that share
	// of the samples see the pool short (docs/compensation.md, "The
	// budgets"). 0 turns it off.
	// Default 0 (budgeted: 0.025); range 0..0.5.
	ShortfallBudget float64
	// ScaleInHold is the longest the churn budget keeps a surplus: a
	// fall is published once the lower level has lasted this long, or
	// sooner when ChangeCost prices it; a scale-out is never delayed. 0
	// turns the churn budget off. Default 0 (budgeted: 5m); range 0..24h.
	ScaleInHold time.Duration
	// ChangeCost is the price of a change, in replica-seconds, that the
	// churn budget weighs a scale-in against (online rent-or-buy): a
	// surplus of S replicas over what the newest samples asked for is
	// kept until it has cost the price, ChangeCost / S beyond the
	// start-up (the longer of ReplicaStartup and the measured one, which a
	// change undone pays again for every replica it brings back), and at
	// most ScaleInHold; then it is dropped. 0: no price, every fall waits
	// the whole ScaleInHold. Default 0 (budgeted: 600); range 0..86400000.
	ChangeCost float64
	// Forecast turns on the seasonal forecast: a bounded history of raw
	// demand (seasonal.Buckets buckets of seasonal.Bucket), a daily or weekly
	// period found in it, and the demand one period ago at the time a
	// replica asked for now will count, scaled to the current level
	// (docs/compensation.md, "The seasonal forecast"). ForecastOn raises
	// the value to the forecast ahead of a predicted rise (never lowers
	// it); ForecastOnly publishes the forecast (ScalingSignal.Forecast)
	// without acting on it. "" reads as off. Default off (budgeted: on).
	Forecast ForecastMode
}

// ForecastMode says what the signal does with the seasonal forecast.
type ForecastMode string

// The forecast modes.
const (
	ForecastOff  ForecastMode = "off"
	ForecastOn   ForecastMode = "on"
	ForecastOnly ForecastMode = "only"
)

// ForecastModes lists the forecast's modes.
func ForecastModes() []string {
	return []string{string(ForecastOff), string(ForecastOn), string(ForecastOnly)}
}

// DefaultOptions returns the documented defaults: the original profile.
func DefaultOptions() Options {
	return Options{
		EwmaHalfLife:                DefaultEwmaHalfLife,
		ScaleInGateWindow:           DefaultScaleInGateWindow,
		ActivationScaleInThreshold:  DefaultScaleInThreshold,
		ResourceScaleInThreshold:    DefaultScaleInThreshold,
		WalDispatchScaleInThreshold: DefaultScaleInThreshold,
		SplitAwareScaleIn:           true,
		Forecast:                    ForecastOff,
	}
}

// MaxBackfill bounds WarmSamples: the instants a starting sampler may
// fold from its source's past. A range query reads them all at once, so
// the bound is the churn budget's own (MaxScaleInHoldSamples).
const MaxBackfill = MaxScaleInHoldSamples

// WarmSamples is how many samples at interval fill the computer's memory:
// the lead's window, the scale-in gate's window, five half-lives of the
// smoothing (which leave 1/32 of the samples before them) and, under a
// shortfall budget, the spread it learns from and the scale-in hold, at
// most MaxBackfill. The windows are then exactly those of a computer that
// has run all along; the smoothing (off in the responsive profile) only
// nearly, and the budget's learnt headroom only as far as the window
// teaches it (docs/compensation.md, "A restarted replica").
func (o Options) WarmSamples(interval time.Duration) int {
	if interval <= 0 {
		return 0
	}
	samples := func(d time.Duration) int { return int((d + interval - 1) / interval) }
	n := max(o.LeadWindow, samples(o.ScaleInGateWindow), samples(5*o.EwmaHalfLife))
	if o.ShortfallBudget > 0 {
		n = max(n, budgetSpreadSamples, samples(o.ScaleInHold))
	}
	return min(n, MaxBackfill)
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
