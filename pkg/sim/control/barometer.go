package control

import (
	"math"
	"strconv"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sim"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// BarometerOptions configure Barometer's controller: the real signal
// computer's options (a profile's, perhaps overridden) and the KEDA target.
type BarometerOptions struct {
	Signal signal.Options
	// Target is the KEDA metrics-api targetValue (AverageValue): KEDA asks
	// for ceil(ScaleValue / Target) replicas. 0 reads at the model's target.
	Target float64
	// WorkingSet has every replica also report its working set: its share
	// of the work in flight, the occupancy times the activation target,
	// which, unlike the utilisation, is not capped at saturation (a source
	// that reads barometer_activations; docs/exposition.md). false: the
	// replicas report utilisation alone, as a host or CPU-only source does.
	WorkingSet bool
	// History is the workload's past as a source that holds it would
	// read it for the seasonal forecast (pressure.SeasonSource): a
	// backtest of a Prometheus query reads it from Prometheus, as the
	// prometheus source does. nil: the computer keeps its own, as it does
	// for scrape and host targets.
	History SeasonHistory
}

// SeasonHistory is a history on the pressure.SeasonStep grid, in the
// simulation's clock.
type SeasonHistory interface {
	// Window returns the points of w, oldest first (an instant with no
	// data has none). The caller does not modify them.
	Window(w pressure.SeasonWindow) []pressure.DemandPoint
}

// ProfileBarometerOptions are a pkg/signal profile's options, read at the
// model's target occupancy.
func ProfileBarometerOptions(profile string) (BarometerOptions, error) {
	o, err := signal.ProfileOptions(profile)
	return BarometerOptions{Signal: o}, err
}

// Barometer drives the real signal computer. Each delivered sample becomes
// an observation of Reading.Replicas replicas, each at the sample's
// occupancy as CPU utilisation (and, with BarometerOptions.WorkingSet, as
// a working set), measured at the sample's time; the real
// compute collector folds it (capping utilisation at 1) and the computer
// turns it into ScaleValue, which already carries the replica count the
// pressure was measured across and every compensation the options turn on.
type Barometer struct {
	target     float64
	workingSet bool
	history    SeasonHistory
	season     heldHistory
	collector  pressure.ComputeCollector
	computer   *signal.Computer
	names      []string
}

// NewBarometer returns Barometer's controller. The surge asks for replicas
// at the KEDA target unless the options name another.
func NewBarometer(m sim.Model, opts BarometerOptions) *Barometer {
	target := opts.Target
	if target <= 0 {
		target = m.Target
	}
	if opts.Signal.SurgeTarget <= 0 {
		opts.Signal.SurgeTarget = target
	}
	return &Barometer{
		target:     target,
		workingSet: opts.WorkingSet,
		history:    opts.History,
		collector:  pressure.ComputeCollector{ActivationWorkingSetTarget: pressure.DefaultActivationWorkingSetTarget},
		computer:   signal.NewComputer(opts.Signal),
	}
}

// Decide folds the delivered sample and reads the signal as the raw
// ceil(value / target), with no HPA between (Deployed adds it).
func (b *Barometer) Decide(s sim.State) int { return KEDAReplicas(b.Value(s), b.target) }

// Value folds the delivered sample and returns the signal's ScaleValue.
// The run's start-up reaches the signal as a measured one
// (signal.Input.MeasuredStartup), as a k8s:// target's sampler measures
// it from the replicas it sees starting.
func (b *Barometer) Value(s sim.State) float64 {
	obs := b.observation(s.Reading)
	in := signal.Input{Compute: b.collector.Collect(obs), MeasuredAt: s.Reading.At, MeasuredStartup: s.Startup}
	if b.history != nil {
		in.Season = b.season.read(b.history, s.Reading.At)
	}
	sig := b.computer.Compute(s.Now, in)
	return sig.ScaleValue
}

// Target is the KEDA target the signal is read at.
func (b *Barometer) Target() float64 { return b.target }

// KEDAReplicas is the count KEDA's HPA asks for at an AverageValue target:
// ceil(value / target). The metric travels as a milli-precision quantity,
// so a value a rounding error above a whole count is that count.
func KEDAReplicas(value, target float64) int {
	return int(math.Ceil(value/target - 1e-9))
}

func (b *Barometer) observation(r sim.Reading) pressure.Observation {
	for len(b.names) < r.Replicas {
		b.names = append(b.names, "replica-"+strconv.Itoa(len(b.names)))
	}
	obs := pressure.Observation{Replicas: make([]pressure.ReplicaObservation, r.Replicas), ObservedAt: r.At, MeasuredAt: r.At}
	for i := range obs.Replicas {
		obs.Replicas[i] = pressure.ReplicaObservation{Name: b.names[i], CPUUtilisation: r.Occupancy}
		if b.workingSet {
			obs.Replicas[i].WorkingSet = r.Occupancy * b.collector.ActivationWorkingSetTarget
			obs.Replicas[i].HasWorkingSet = true
		}
	}
	return obs
}

// heldHistory reads a SeasonHistory at each sample as the prometheus
// source reads Prometheus (promsource.Source.ObserveSeason): the recent
// windows at the grid instant at or before the sample's data, read again
// when the grid moves, and the long history once an hour. The data's own
// instant, not the turn's, so the history is no fresher than the sample
// the metric delay delivered.
type heldHistory struct {
	grid, hour time.Time
	recent     []pressure.DemandPoint
	season     pressure.Season
}

func (h *heldHistory) read(from SeasonHistory, measuredAt time.Time) *pressure.Season {
	h.season.Long = nil
	if grid := measuredAt.Truncate(pressure.SeasonStep); !grid.Equal(h.grid) {
		h.grid, h.recent = grid, h.recent[:0]
		for _, w := range pressure.SeasonRecentWindows(grid) {
			h.recent = append(h.recent, from.Window(w)...)
		}
		h.season.Recent = h.recent
	}
	if hour := measuredAt.Truncate(pressure.SeasonDetectEvery); !hour.Equal(h.hour) {
		h.hour = hour
		h.season.Long = from.Window(pressure.SeasonLongWindow(hour))
	}
	return &h.season
}
