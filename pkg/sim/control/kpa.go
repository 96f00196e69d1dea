package control

import (
	"math"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// KPAOptions are Knative's pod autoscaler settings (knative/serving
// pkg/autoscaler/config): the windows, the panic threshold and the rate
// limits. The target per pod is the model's target occupancy, as the
// KPA's target utilisation (0.7 by default) times the container's
// concurrency; the KPA reads demand as a total over its pods.
type KPAOptions struct {
	// StableWindow is the averaging window of the stable mode (60s).
	StableWindow time.Duration
	// PanicWindowPercent is the panic window as a percent of the stable
	// window (10 %: 6s).
	PanicWindowPercent float64
	// PanicThreshold: panic starts when the panic window's demand asks
	// for this many times the ready pods (200 %: 2).
	PanicThreshold float64
	// MaxScaleUpRate and MaxScaleDownRate bound one decision to
	// [floor(ready / down), ceil(up x ready)] (1000 and 2).
	MaxScaleUpRate, MaxScaleDownRate float64
}

// DefaultKPAOptions are Knative's defaults.
func DefaultKPAOptions() KPAOptions {
	return KPAOptions{StableWindow: 60 * time.Second, PanicWindowPercent: 10, PanicThreshold: 2, MaxScaleUpRate: 1000, MaxScaleDownRate: 2}
}

// KPASetting names the KPA with options.
func KPASetting(name string, o KPAOptions) sim.Setting {
	return sim.Setting{Name: name, New: func(m sim.Model) sim.Controller { return NewKPA(m, o) }}
}

type kpaSample struct {
	at    time.Time
	total float64
}

// KPA follows knative/serving pkg/autoscaler/scaling: a stable and a panic
// average of the total demand, panic mode on a surge with its high-water
// mark, and the rate limits. Mapped to the turn model (docs/kpa.md): each
// turn is one tick, and the delivered sample is recorded at the decision's
// time, as the KPA's collector stamps what it scraped when it scraped it;
// the total is the sample's occupancy times the replicas it was measured
// across, in replicas of work (uncapped: concurrency queues, it does not
// saturate); the target is the model's target occupancy.
type KPA struct {
	model     sim.Model
	opts      KPAOptions
	samples   []kpaSample
	started   bool
	panicTime time.Time
	maxPanic  int
}

// NewKPA returns the KPA's algorithm.
func NewKPA(m sim.Model, o KPAOptions) *KPA { return &KPA{model: m, opts: o} }

// Decide records the delivered sample and computes the desired pods.
func (k *KPA) Decide(s sim.State) int {
	if !k.started {
		k.started = true
		// A new autoscaler on more than one pod starts in panic, holding
		// the current count, so it never scales down on an empty history.
		if s.Replicas > 1 {
			k.panicTime, k.maxPanic = s.Now, s.Replicas
		}
	}
	k.samples = append(k.samples, kpaSample{s.Now, s.Reading.Occupancy * float64(s.Reading.Replicas)})
	panicWindow := time.Duration(float64(k.opts.StableWindow) * k.opts.PanicWindowPercent / 100)
	stable, panicking := k.average(s.Now, k.opts.StableWindow), k.average(s.Now, panicWindow)
	k.forget(s.Now)

	ready := float64(max(1, s.Ready))
	dspc := math.Ceil(stable / k.model.Target)
	dppc := math.Ceil(panicking / k.model.Target)
	lo, hi := math.Floor(ready/k.opts.MaxScaleDownRate), math.Ceil(k.opts.MaxScaleUpRate*ready)
	desiredStable := int(min(max(dspc, lo), hi))
	desiredPanic := int(min(max(dppc, lo), hi))

	over := dppc/ready >= k.opts.PanicThreshold
	switch {
	case over:
		k.panicTime = s.Now
	case !k.panicTime.IsZero() && k.panicTime.Add(k.opts.StableWindow).Before(s.Now):
		// The surge has made its way into the stable average.
		k.panicTime, k.maxPanic = time.Time{}, 0
	}
	if k.panicTime.IsZero() {
		return desiredStable
	}
	// In panic the larger of the two counts is provisioned, and the count
	// never decreases: its high-water mark holds.
	k.maxPanic = max(k.maxPanic, desiredPanic, desiredStable)
	return k.maxPanic
}

// average is the mean total of the samples recorded in (now - window, now];
// a window shorter than a turn holds the newest sample alone.
func (k *KPA) average(now time.Time, window time.Duration) float64 {
	var sum float64
	n := 0
	for _, smp := range k.samples {
		if smp.at.After(now.Add(-window)) {
			sum += smp.total
			n++
		}
	}
	if n == 0 {
		return k.samples[len(k.samples)-1].total
	}
	return sum / float64(n)
}

// forget drops the samples older than the stable window.
func (k *KPA) forget(now time.Time) {
	i := 0
	for i < len(k.samples)-1 && !k.samples[i].at.After(now.Add(-k.opts.StableWindow)) {
		i++
	}
	k.samples = k.samples[i:]
}
