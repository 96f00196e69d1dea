//go:build !race

package report

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
