//go:build !race

package registry_test

// testTargets is the test's target count: issue 12's 10,000.
const testTargets = contentionTargets
