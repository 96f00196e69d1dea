//go:build !race

package registry_test

// testTargets is the test's target count: the benchmark's 10,000.
const testTargets = contentionTargets
