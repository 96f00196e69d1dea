package main

import (
	"io"

	"github.com/barometer-scaler/barometer/pkg/sim/command"
)

// runSimulate is `scaler simulate`, the decision-quality simulator's
// command (pkg/sim/command).
func runSimulate(args []string, stdout io.Writer) error { return command.Simulate(args, stdout) }
