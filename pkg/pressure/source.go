package pressure

import (
	"context"
	"time"
)

// Source reads one Observation of the workload. Implementations must honour
// ctx's deadline: the sampler gives each call a budget well inside the sample
// interval. An error means nothing usable was read (the sample fails and the
// previous signal stands); a partial read is an Observation with Missing set.
type Source interface {
	Observe(ctx context.Context) (Observation, error)
}

// HistorySource is a source that can observe the past: what it would
// have observed had it been asked at earlier instants (a Prometheus
// server evaluates its queries at any time it keeps data for). A sampler
// that starts late folds the recent past from it, so it holds the same
// state as a replica that has run all along (sampling.SamplerConfig.Backfill).
type HistorySource interface {
	Source
	// ObservePast observes the n instants every step from first, oldest
	// first, at once: one request, not one per instant (a Prometheus
	// server answers them as one range query). An instant that could not
	// be read has its Err set; an error means none could.
	ObservePast(ctx context.Context, first time.Time, step time.Duration, n int) ([]PastObservation, error)
}

// PastObservation is what a HistorySource observed at the instant At.
type PastObservation struct {
	At          time.Time
	Observation Observation
	Err         error
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context) (Observation, error)

// Observe calls f.
func (f SourceFunc) Observe(ctx context.Context) (Observation, error) { return f(ctx) }
