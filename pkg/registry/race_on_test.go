//go:build race

package registry_test

// testTargets is the test's target count under the race detector, which
// allows at most 8,128 live goroutines (each target's sampler is one); the
// benchmark, run without it, keeps 10,000.
const testTargets = 2000
