package policy

import (
	"math"
	"time"
)

// Defaults of the queue-pressure policy (docs/semantics.md, "The
// queue-pressure policy"). DefaultServiceTime is Barometer's choice of the
// stand-in before any run is seen.
const (
	DefaultEwmaAlpha           = 0.3
	DefaultServiceTime         = time.Second
	DefaultTargetUtilization   = 0.75
	DefaultRateCutoff          = 0.01
	DefaultDrainTime           = 30 * time.Second
	DefaultReservationHorizon  = 60 * time.Second
	DefaultMaxStepUpRatio      = 1.0
	DefaultMaxStepUpAbs        = 4
	DefaultStabilizationWindow = 60 * time.Second
	DefaultMaxStepDown         = 1
	DefaultScaleDownCooldown   = 30 * time.Second
)

// Class is one SLO class of the backlog.
type Class struct {
	// Name matches the class label of the backlog gauges.
	Name string
	// SLO is the longest acceptable predicted queue wait; 0 means the class
	// has no SLO and only ranks (its backlog still counts towards the SLO
	// terms of lower classes).
	SLO time.Duration
}

// QueueOptions tune the queue-pressure policy. The zero value is not the
// default: start from DefaultQueueOptions.
type QueueOptions struct {
	// EwmaAlpha is the weight of the newest sample in the arrival-rate and
	// service-time averages, in (0, 1] (the ewmaAlpha key).
	EwmaAlpha float64
	// DefaultServiceTime stands in for the mean run time until a run has
	// been observed.
	DefaultServiceTime time.Duration
	// TargetUtilization is what the arrival-rate term aims for, in (0, 1].
	TargetUtilization float64
	// RateCutoff: a smoothed arrival rate (per second) below it counts as
	// zero, because the average decays toward zero but never reaches it.
	RateCutoff float64
	// DrainTime is the time in which the current backlog should be drained.
	DrainTime time.Duration
	// Classes are the SLO classes, highest priority first. Backlog of a
	// class not listed ranks below every listed class and has no SLO.
	Classes []Class
	// ReservationHorizon: reservations active within [now, now+horizon]
	// count towards desired capacity.
	ReservationHorizon time.Duration
	// MinReplicas and MaxReplicas clamp the desired count (Unbounded for no
	// maximum).
	MinReplicas, MaxReplicas int
	// A scale-up adds at most max(ceil(current x MaxStepUpRatio),
	// MaxStepUpAbs) replicas per evaluation. MaxStepUpAbs is at least 1 so
	// that a target at zero replicas can always grow.
	MaxStepUpRatio float64
	MaxStepUpAbs   int
	// StabilizationWindow: a scale-down goes no lower than the highest
	// desired count of this window.
	StabilizationWindow time.Duration
	// MaxStepDown replicas at most are removed per ScaleDownCooldown.
	MaxStepDown       int
	ScaleDownCooldown time.Duration
	// SlotsPerReplica is how many work items one replica runs at once. The
	// formula's terms are slots (runs, like busy and reservations); desired
	// is ceil(slots / SlotsPerReplica) replicas, and the scale-down floor is
	// ceil(busy / SlotsPerReplica). 0 reads as 1.
	SlotsPerReplica int
}

// DefaultQueueOptions returns the documented defaults: no SLO classes, no
// minimum, no maximum.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{
		EwmaAlpha:           DefaultEwmaAlpha,
		DefaultServiceTime:  DefaultServiceTime,
		TargetUtilization:   DefaultTargetUtilization,
		RateCutoff:          DefaultRateCutoff,
		DrainTime:           DefaultDrainTime,
		ReservationHorizon:  DefaultReservationHorizon,
		MaxReplicas:         Unbounded,
		MaxStepUpRatio:      DefaultMaxStepUpRatio,
		MaxStepUpAbs:        DefaultMaxStepUpAbs,
		StabilizationWindow: DefaultStabilizationWindow,
		MaxStepDown:         DefaultMaxStepDown,
		ScaleDownCooldown:   DefaultScaleDownCooldown,
		SlotsPerReplica:     1,
	}
}

// Validate returns an *OptionError naming the first invalid field.
func (o QueueOptions) Validate() error {
	return firstError(
		checkFloat("EwmaAlpha", o.EwmaAlpha, 0, 1, true),
		checkDuration("DefaultServiceTime", o.DefaultServiceTime, true),
		checkFloat("TargetUtilization", o.TargetUtilization, 0, 1, true),
		checkFloat("RateCutoff", o.RateCutoff, 0, math.Inf(1), false),
		checkDuration("DrainTime", o.DrainTime, true),
		checkClasses(o.Classes),
		checkDuration("ReservationHorizon", o.ReservationHorizon, false),
		checkInt("MinReplicas", o.MinReplicas, 0),
		checkInt("MaxReplicas", o.MaxReplicas, o.MinReplicas),
		checkFloat("MaxStepUpRatio", o.MaxStepUpRatio, 0, math.Inf(1), false),
		checkInt("MaxStepUpAbs", o.MaxStepUpAbs, 1),
		checkDuration("StabilizationWindow", o.StabilizationWindow, false),
		checkInt("MaxStepDown", o.MaxStepDown, 1),
		checkDuration("ScaleDownCooldown", o.ScaleDownCooldown, false),
		checkInt("SlotsPerReplica", o.SlotsPerReplica, 0),
	)
}

func checkClasses(cs []Class) error {
	seen := make(map[string]bool, len(cs))
	for _, c := range cs {
		switch {
		case c.Name == "":
			return &OptionError{Field: "Classes", Value: `""`, Allowed: "class names must not be empty"}
		case seen[c.Name]:
			return &OptionError{Field: "Classes", Value: c.Name, Allowed: "each class listed once"}
		case c.SLO < 0:
			return &OptionError{Field: "Classes", Value: c.Name + "=" + c.SLO.String(), Allowed: "an SLO >= 0 (0: no SLO)"}
		}
		seen[c.Name] = true
	}
	return nil
}
