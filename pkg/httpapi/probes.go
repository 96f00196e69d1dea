package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	probe "github.com/alexliesenfeld/health"

	"github.com/barometer-scaler/barometer/pkg/health"
	"github.com/barometer-scaler/barometer/pkg/sampling"
)

// probeTimeout bounds one probe; every check is an in-memory read, so
// anything near it means the process is wedged.
const probeTimeout = 2 * time.Second

// newChecker builds a checker that runs its checks on every request and
// nothing in the background: no cache (a probe must see the state of now,
// and the checks are an atomic load each) and no autostart (which would
// run the checks once on a goroutine nobody waits for).
func newChecker(checks ...probe.Check) probe.Checker {
	opts := []probe.CheckerOption{probe.WithDisabledAutostart(), probe.WithDisabledCache(), probe.WithTimeout(probeTimeout)}
	for _, c := range checks {
		opts = append(opts, probe.WithCheck(c))
	}
	return probe.NewChecker(opts...)
}

// livez is up for as long as the process answers HTTP: liveness that
// depended on anything else would have Kubernetes restart a scaler that a
// restart cannot fix.
func (s *server) livez() http.Handler {
	return probe.NewHandler(newChecker())
}

// readyz is down while draining, so that Kubernetes stops routing KEDA to a
// scaler that is shutting down, and while the default target's signal is
// stale, so that KEDA is sent to a replica that can answer. With no default
// target there is nothing to be stale and only draining counts. The
// workload's own pressure is deliberately not a readiness input: see
// serveSignalHealth.
func (s *server) readyz() http.Handler {
	return probe.NewHandler(newChecker(
		probe.Check{Name: "draining", Check: func(context.Context) error {
			if s.draining() {
				return errors.New("draining: the scaler is shutting down")
			}
			return nil
		}},
		health.FreshnessCheck("signal", s.defaultSnapshot, s.reg.Now),
	))
}

// defaultSnapshot is the default target's latest snapshot, nil without one.
func (s *server) defaultSnapshot() *sampling.Snapshot {
	if served, ok := s.reg.Default(); ok {
		return served.Target.Load()
	}
	return nil
}
