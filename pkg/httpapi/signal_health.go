package httpapi

import (
	"net/http"

	"github.com/barometer-scaler/barometer/pkg/health"
	"github.com/barometer-scaler/barometer/pkg/registry"
)

// verdictView is the /health/signal body: the projection (status, causes,
// data) plus the target and its freshness.
type verdictView struct {
	health.Verdict
	Stale       bool   `json:"stale"`
	Target      string `json:"target"`
	StaleReason string `json:"staleReason,omitempty"`
}

// serveSignalHealth writes the workload's health projection: 200 for
// Healthy and Degraded (a degraded workload still takes traffic; the causes
// say what is wrong), 503 for Unhealthy.
//
// This is served beside /readyz, never inside it: the scaler's readiness
// must not depend on the workload's pressure, because an unready scaler is
// unreachable exactly when the workload is under pressure and scaling
// matters most.
//
// A stale signal is also 503, whatever its last verdict: a projection of
// data too old to trust cannot vouch for the workload, and a warming-up
// signal would otherwise read Healthy on all-zero pressure.
func (s *server) serveSignalHealth(w http.ResponseWriter, served registry.Served) {
	t := served.Target
	snap := t.Load()
	now := s.reg.Now()
	v := verdictView{Verdict: health.Evaluate(&snap.Signal, now, s.health), Target: t.Key}
	code := http.StatusOK
	if v.Status == health.Unhealthy {
		code = http.StatusServiceUnavailable
	}
	if err := health.Fresh(snap, now); err != nil {
		v.Stale, v.StaleReason = true, err.Error()
		code = http.StatusServiceUnavailable
		retryAfter(w, snap)
	}
	s.writeJSON(w, code, v)
}
