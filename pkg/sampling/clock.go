package sampling

import "time"

// Clock is the sampler's source of time. Production uses SystemClock; tests
// inject a fake and drive the sampler sample by sample.
type Clock interface {
	Now() time.Time
	// NewTicker returns a channel that delivers ticks every d, and a stop
	// function.
	NewTicker(d time.Duration) (<-chan time.Time, func())
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker wraps time.NewTicker.
func (SystemClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}
