//go:build !race

package command

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
