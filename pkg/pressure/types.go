package pressure

import (
	"fmt"
	"math"
	"time"
)

// WalSaturationState is the discrete saturation of a write-ahead-log path.
// The zero value is Healthy; the order is the order of severity.
type WalSaturationState int

// The WAL saturation states, from best to worst.
const (
	Healthy WalSaturationState = iota
	Throttled
	Saturated
)

var walStateNames = [...]string{"Healthy", "Throttled", "Saturated"}

// String returns the state's name, as served in JSON and logs.
func (s WalSaturationState) String() string {
	if s < Healthy || s > Saturated {
		return fmt.Sprintf("WalSaturationState(%d)", int(s))
	}
	return walStateNames[s]
}

// MarshalText serves the state by name (enums are strings on every surface).
func (s WalSaturationState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state by name.
func (s *WalSaturationState) UnmarshalText(b []byte) error {
	for i, n := range walStateNames {
		if string(b) == n {
			*s = WalSaturationState(i)
			return nil
		}
	}
	return fmt.Errorf("unknown WAL saturation state %q (allowed: Healthy, Throttled, Saturated)", b)
}

// WalStateFromGauge maps the exposition gauge (0 Healthy, 1 Throttled,
// 2 Saturated) onto a state. Values between states round up to the worse one,
// and anything out of range or NaN is an error so a broken exporter is seen.
func WalStateFromGauge(v float64) (WalSaturationState, error) {
	switch {
	case math.IsNaN(v) || v < 0 || v > 2:
		return Healthy, fmt.Errorf("WAL saturation gauge %v out of range (allowed: 0 Healthy, 1 Throttled, 2 Saturated)", v)
	case v == 0:
		return Healthy, nil
	case v <= 1:
		return Throttled, nil
	default:
		return Saturated, nil
	}
}

// DispatchPressure is the WAL-dispatch dimension a state stands for:
// Healthy 0, Throttled 0.5, Saturated 1.0.
func (s WalSaturationState) DispatchPressure() float64 {
	switch s {
	case Healthy:
		return 0
	case Throttled:
		return 0.5
	default:
		return 1
	}
}

// Worse returns the more severe of two states.
func Worse(a, b WalSaturationState) WalSaturationState {
	if b > a {
		return b
	}
	return a
}

// Clamp01 reads a dimension the way every collector and the computer do:
// NaN and negatives are 0, anything above 1 (including +Inf) is 1.
func Clamp01(v float64) float64 {
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v >= 1:
		return 1
	default:
		return v
	}
}

// ReplicaObservation is what one replica reported in one sample.
type ReplicaObservation struct {
	// Name identifies the replica (its address or pod name).
	Name string
	// Pod is the replica's Kubernetes pod, where the source knows it
	// (k8s:// scrape targets); "" otherwise.
	Pod string
	// WorkingSet is the replica's activation working set (a count), when
	// HasWorkingSet says the replica reported one. It is not bounded by the
	// replica's capacity: an overloaded replica's keeps growing.
	WorkingSet    float64
	HasWorkingSet bool
	// CPUUtilisation is CPU in use over the CPU limit, 0..1.
	CPUUtilisation float64
	// MemoryUsedBytes and MemoryLimitBytes give memory utilisation; a
	// MemoryLimitBytes <= 0 means the replica reports no ceiling.
	MemoryUsedBytes  float64
	MemoryLimitBytes float64
	// WalSaturation is the worst WAL state the replica has observed.
	WalSaturation WalSaturationState
	// SplitsInFlight is the replica's in-flight split footprint, when
	// HasSplits says it reported one.
	SplitsInFlight float64
	HasSplits      bool
}

// MissingReplica is a replica the source expected but could not read.
type MissingReplica struct {
	Name string
	Err  error
}

// TreeObservation is one WAL tree as a storage source sees it.
type TreeObservation struct {
	Tree string
	// RetainedBytes is the WAL bytes the tree retains; RetainedBytesCeiling
	// its budget. A tree with no ceiling (<= 0) adds neither bytes nor budget.
	RetainedBytes        int64
	RetainedBytesCeiling int64
	// Saturation is the tree's WAL saturation state.
	Saturation WalSaturationState
	// PartitionAccounts holds, for each partition in order, the storage
	// account (provider key) that partition is placed on.
	PartitionAccounts []string
}

// Observation is one sample of everything a source can see.
type Observation struct {
	Replicas []ReplicaObservation
	Missing  []MissingReplica
	// Starting names the replicas that exist but are not ready yet, and
	// Terminating those on their way out; neither was read. Only a source
	// that can tell (Kubernetes discovery) sets them. Starting replicas
	// count as launched (launch tracking); terminating ones count nowhere.
	Starting    []string
	Terminating []string
	// Trees is the storage axis; nil when the source has no storage view.
	Trees []TreeObservation
	// Queue is the work queue; nil when the source has no queue view.
	Queue *QueueObservation
	// SplitsErr is set when the split footprint could not be read; the
	// split probe fails open on it.
	SplitsErr error
	// ObservedAt is when the source took the sample.
	ObservedAt time.Time
	// MeasuredAt is when the data in the sample was measured, which can
	// be well before ObservedAt: the scrape source sets when the replicas
	// answered, the Prometheus source the newest sample timestamp in its
	// results, the host source the moment it read. Zero means ObservedAt.
	// The signal's lag compensation counts from it.
	MeasuredAt time.Time
}
