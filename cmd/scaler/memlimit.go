package main

import (
	"log/slog"

	"github.com/barometer-scaler/barometer/pkg/pressure/host"
)

// memoryLimitShare is the part of the container's memory limit the Go
// runtime is told it may use: the rest is what it does not count (the
// binary's mapped pages, about 30 MiB) and headroom. 10,000 targets then
// fit in 300 MiB (docs/operations.md).
const memoryLimitShare = 0.85

func setMemoryLimit(logger *slog.Logger) {
	if limit, soft := host.NewReader(host.ReaderOptions{}).SetRuntimeMemoryLimit(memoryLimitShare); soft > 0 {
		logger.Info("Go runtime memory limit set from the container's", "container_bytes", limit, "gomemlimit_bytes", soft)
	}
}
