package pressure

import "context"

// Source reads one Observation of the workload. Implementations must honour
// ctx's deadline: the sampler gives each call a budget well inside the sample
// interval. An error means nothing usable was read (the sample fails and the
// previous signal stands); a partial read is an Observation with Missing set.
type Source interface {
	Observe(ctx context.Context) (Observation, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context) (Observation, error)

// Observe calls f.
func (f SourceFunc) Observe(ctx context.Context) (Observation, error) { return f(ctx) }
