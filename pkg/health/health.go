// Package health says what a scaling signal means for probes: the projection
// of a signal onto Healthy, Degraded or Unhealthy, and the freshness of the
// sampler behind it, as checks for github.com/alexliesenfeld/health.
package health

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alexliesenfeld/health"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// Status is the verdict of a projection; the order is the order of severity.
type Status int

// The verdicts, from best to worst.
const (
	Healthy Status = iota
	Degraded
	Unhealthy
)

var statusNames = [...]string{"Healthy", "Degraded", "Unhealthy"}

// String returns the verdict's name.
func (s Status) String() string {
	if s < Healthy || s > Unhealthy {
		return fmt.Sprintf("Status(%d)", int(s))
	}
	return statusNames[s]
}

// MarshalText serves the verdict by name.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Options are the compute tiers of the projection.
type Options struct {
	// ComputeTiers turns the compute-pressure tiers on.
	ComputeTiers bool
	// DegradedAt and UnhealthyAt bound the worst compute dimension.
	DegradedAt, UnhealthyAt float64
}

// DefaultOptions are the documented tiers: Degraded at 0.85, Unhealthy at 0.95.
func DefaultOptions() Options {
	return Options{ComputeTiers: true, DegradedAt: 0.85, UnhealthyAt: 0.95}
}

// Data is what a verdict was decided from, reported alongside it.
type Data struct {
	ScaleValue              float64                     `json:"scaleValue"`
	RecommendedReplicas     int                         `json:"recommendedReplicas"`
	Reason                  string                      `json:"reason"`
	Activation              float64                     `json:"activation"`
	Resource                float64                     `json:"resource"`
	WalDispatch             float64                     `json:"walDispatch"`
	Worst                   float64                     `json:"worst"`
	WalSaturation           pressure.WalSaturationState `json:"walSaturation"`
	StorageOverThreshold    bool                        `json:"storageOverThreshold"`
	StorageWalRetainedBytes int64                       `json:"storageWalRetainedBytes"`
	SampledAt               time.Time                   `json:"sampledAt"`
	CheckedAt               time.Time                   `json:"checkedAt"`
}

// Verdict is the projection of one signal.
type Verdict struct {
	Status Status `json:"status"`
	// Causes says why the verdict is worse than Healthy, one line a cause.
	Causes []string `json:"causes"`
	Data   Data     `json:"data"`
}

// Evaluate projects a signal: the worst of the compute tier, the WAL state
// (Saturated is Unhealthy, Throttled Degraded) and the storage flag, which is
// at most Degraded because more replicas cannot fix storage.
func Evaluate(s *signal.ScalingSignal, now time.Time, opts Options) Verdict {
	c := s.Compute
	act, res, wal := pressure.Clamp01(c.Activation), pressure.Clamp01(c.Resource), pressure.Clamp01(c.WalDispatch)
	v := Verdict{
		Causes: []string{},
		Data: Data{
			ScaleValue: s.ScaleValue, RecommendedReplicas: s.RecommendedReplicas, Reason: s.Reason,
			Activation: act, Resource: res, WalDispatch: wal, Worst: max(act, res, wal),
			WalSaturation: c.WalSaturation, StorageOverThreshold: s.Storage.OverThreshold,
			StorageWalRetainedBytes: s.Storage.WalRetainedBytes, SampledAt: s.SampledAt, CheckedAt: now,
		},
	}
	worse := func(st Status, cause string, args ...any) {
		v.Status = max(v.Status, st)
		v.Causes = append(v.Causes, fmt.Sprintf(cause, args...))
	}
	if opts.ComputeTiers {
		switch worst := v.Data.Worst; {
		case worst >= opts.UnhealthyAt:
			worse(Unhealthy, "compute pressure %.2f at or above %.2f", worst, opts.UnhealthyAt)
		case worst >= opts.DegradedAt:
			worse(Degraded, "compute pressure %.2f at or above %.2f", worst, opts.DegradedAt)
		}
	}
	switch c.WalSaturation {
	case pressure.Saturated:
		worse(Unhealthy, "WAL saturated")
	case pressure.Throttled:
		worse(Degraded, "WAL throttled")
	}
	if s.Storage.OverThreshold {
		worse(Degraded, "storage over threshold")
	}
	return v
}

// SnapshotFunc returns the latest snapshot of a sampler (Sampler.Load).
type SnapshotFunc func() *sampling.Snapshot

// ErrWarmingUp is the freshness failure before the first sample.
var ErrWarmingUp = errors.New("warming up: no sample yet")

// Fresh fails when the signal has never been sampled, or its last sample is
// older than 3 x the sample interval.
func Fresh(snap *sampling.Snapshot, now time.Time) error {
	switch {
	case snap.Signal.WarmingUp():
		if snap.LastErr != nil {
			return fmt.Errorf("%w; last error: %v", ErrWarmingUp, snap.LastErr)
		}
		return ErrWarmingUp
	case snap.Stale(now):
		msg := fmt.Sprintf("signal stale: last sample %s ago, more than 3 x %s",
			now.Sub(snap.Signal.SampledAt).Round(time.Millisecond), snap.Interval)
		if snap.LastErr != nil {
			return fmt.Errorf("%s; last error: %w", msg, snap.LastErr)
		}
		return errors.New(msg)
	}
	return nil
}

// FreshnessCheck is a readiness check that fails while Fresh fails. A nil
// snapshot (no target to watch) passes: there is nothing to be stale.
func FreshnessCheck(name string, load SnapshotFunc, now func() time.Time) health.Check {
	return health.Check{
		Name: name,
		Check: func(context.Context) error {
			snap := load()
			if snap == nil {
				return nil
			}
			return Fresh(snap, now())
		},
	}
}

// PressureCheck fails when the projection is Unhealthy. Degraded passes: a
// degraded workload should still be routed to, and the cause is in the
// verdict served beside it.
func PressureCheck(name string, load SnapshotFunc, now func() time.Time, opts Options) health.Check {
	return health.Check{
		Name: name,
		Check: func(context.Context) error {
			v := Evaluate(&load().Signal, now(), opts)
			if v.Status == Unhealthy {
				return fmt.Errorf("unhealthy: %v", v.Causes)
			}
			return nil
		},
	}
}
