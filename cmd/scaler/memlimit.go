package main

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/barometer-scaler/barometer/pkg/pressure/host"
)

// memoryLimitShare is the part of the container's memory limit the Go
// runtime is told it may use: the rest is what it does not count (the
// binary's mapped pages, about 30 MiB) and headroom.
const memoryLimitShare = 0.85

// setMemoryLimit gives the Go runtime a soft limit of 85 % of the
// container's memory limit when GOMEMLIMIT sets none, so that the heap
// is collected, and freed pages returned, as it nears the limit rather
// than at twice the live heap: 10,000 targets then fit in 300 MiB
// (docs/operations.md). It costs CPU only when the live heap nears it.
// GOMEMLIMIT (even "off") and a host without a cgroup v2 limit leave the
// runtime's default.
func setMemoryLimit(logger *slog.Logger) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	limit, ok := host.NewReader(host.ReaderOptions{}).MemoryLimit()
	if !ok {
		return
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	logger.Info("Go runtime memory limit set from the container's", "container_bytes", limit, "gomemlimit_bytes", soft)
}
