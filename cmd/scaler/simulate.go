package main

import (
	"io"

	simcommand "github.com/barometer-scaler/barometer/pkg/sim/command"
)

// runSimulate is `scaler simulate`, the decision-quality simulator's
// command (pkg/sim/command).
func runSimulate(args []string, stdout io.Writer) error { return simcommand.Simulate(args, stdout) }
