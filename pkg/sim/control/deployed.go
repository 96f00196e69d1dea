package control

import (
	"math"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// ValueController publishes a metric value each turn, as Barometer's
// signal does, rather than a replica count: what becomes of the value is
// the autoscaler's business.
type ValueController interface {
	Value(s sim.State) float64
}

// Deployed scores a value the way a ScaledObject deploys it: KEDA sends
// the value to the HPA as a milli-precision quantity (truncated, as
// resource.NewMilliQuantity(int64(v*1000)) does), and the HPA's algorithm
// for an External metric with an AverageValue target turns it into a
// replica count: ceil(value / target), applied only when value / (target x
// current replicas) is outside the tolerance, then the behavior's
// stabilization windows and rate policies.
type Deployed struct {
	signal ValueController
	hpa    *HPA
	target int64 // milli
}

// Deployment is how a Barometer run turns the signal's value into a
// replica count.
type Deployment int

// The deployments a Barometer run is scored as.
const (
	// DeployedRecommended is the value through KEDA and the HPA with the
	// behavior the README's ScaledObject examples recommend
	// (RecommendedHPAOptions): what a user who follows them gets.
	DeployedRecommended Deployment = iota
	// DeployedDefault is the value through KEDA and the HPA with
	// Kubernetes' default behavior (DefaultHPAOptions): a ScaledObject
	// without a behavior block.
	DeployedDefault
	// RawSignal is the signal alone: ceil(value / target), no HPA between.
	RawSignal
)

// String says how the run was scored, as every Barometer row says it.
func (d Deployment) String() string {
	switch d {
	case DeployedDefault:
		return "deployed, Kubernetes default behavior"
	case RawSignal:
		return "raw signal"
	}
	return "deployed, recommended behavior"
}

// hpaOptions are the HPA's tolerance and behavior under the deployment;
// the raw signal has none (its options are the recommended ones, unused).
func (d Deployment) hpaOptions() HPAOptions {
	if d == DeployedDefault {
		return DefaultHPAOptions()
	}
	return RecommendedHPAOptions()
}

// RecommendedHPAOptions is the behavior the README's ScaledObject examples
// recommend for Barometer: Kubernetes' default with no scale-down
// stabilization window. The signal's churn budget already holds a fall
// until the lower level has lasted (signal.Options.ScaleInHold); the
// HPA's 300 s window on top would hold every scale-in five minutes more.
// Scale-up keeps its default (no window, 100 % or 4 pods per 15 s).
func RecommendedHPAOptions() HPAOptions {
	o := DefaultHPAOptions()
	o.ScaleDown.StabilizationWindow = 0
	return o
}

// NewDeployed returns the pipeline that turns signal's value into a count
// through KEDA at the AverageValue target and an HPA with opts.
func NewDeployed(m sim.Model, signal ValueController, target float64, opts HPAOptions) *Deployed {
	return &Deployed{signal: signal, hpa: NewHPA(m, opts), target: max(1, milli(target))}
}

// milli is a value as KEDA hands it to the HPA: in thousandths, truncated.
func milli(v float64) int64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 0
	}
	return int64(v * 1000)
}

// Decide reads the signal's value and lets the HPA decide.
func (d *Deployed) Decide(s sim.State) int {
	value := milli(d.signal.Value(s))
	current := s.Replicas
	desired := current
	ratio := float64(value) / float64(d.target*int64(max(1, current)))
	if math.Abs(1-ratio) > d.hpa.opts.Tolerance {
		desired = int(math.Ceil(float64(value) / float64(d.target)))
	}
	return d.hpa.behave(desired, s)
}
