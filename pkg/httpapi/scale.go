package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/barometer-scaler/barometer/pkg/health"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signalview"
)

// defaultTarget serves a per-target endpoint for the default target.
func (s *server) defaultTarget(base string, serve func(http.ResponseWriter, registry.Served)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served, ok := s.reg.Default()
		if !ok {
			s.writeError(w, http.StatusNotFound,
				"no default target: the scaler was started without one; ask for "+base+"/{namespace}/{name}")
			return
		}
		serve(w, served)
	})
}

// refTarget serves a per-target endpoint for the ScaledObject named by the
// path's {namespace}/{name}.
func (s *server) refTarget(serve func(http.ResponseWriter, registry.Served)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served, ok := s.lookup(w, r); ok {
			serve(w, served)
		}
	})
}

// serveScale writes a target's signal, its recommendedReplicas what KEDA
// asks for at the caller's own trigger's target.
//
// A stale signal (never sampled, or older than 3 x the sample interval) is
// answered 503 with the full body, stale true and the reason. KEDA's
// metrics-api trigger reads valueLocation from a 200 and counts anything
// else as a failure, and only a failure lets the ScaledObject's fallback
// take over; a 200 would hand it a warming-up 0 or a frozen value as
// current. People and dashboards still get the last signal, flagged.
func (s *server) serveScale(w http.ResponseWriter, served registry.Served) {
	snap := served.Target.Load()
	staleErr := health.Fresh(snap, s.reg.Now())
	code := http.StatusOK
	if staleErr != nil {
		code = http.StatusServiceUnavailable
		retryAfter(w, snap)
	}
	// The body is signalview's Signal, the shape the gRPC SignalService
	// serves as well; its JSON tags hold /scale's names and order.
	s.writeJSON(w, code, signalview.ForTrigger(&snap.Signal, served.Target.Key, staleErr, served.Trigger))
}

// targets serves GET /targets: every running target, sorted by key.
//
// The listing is encoded one target at a time: encoding/json keeps the
// buffer of its largest encoding for the next, so one listing of 1,000
// targets (650 kB) would stay allocated for as long as anything in the
// process encodes JSON, long after the targets are gone.
func (s *server) targets(w http.ResponseWriter, _ *http.Request) {
	list := s.reg.List()
	if list == nil {
		s.writeJSON(w, http.StatusOK, list)
		return
	}
	body := make([]byte, 0, 64*len(list)+3)
	body = append(body, '[')
	for i, t := range list {
		b, err := json.Marshal(t)
		if err != nil {
			s.writeJSON(w, http.StatusOK, list) // answers the encoding error
			return
		}
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, b...)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, ']', '\n'))
}

// lookup resolves the {namespace}/{name} of the path to the target serving
// it, or answers 404.
func (s *server) lookup(w http.ResponseWriter, r *http.Request) (registry.Served, bool) {
	ref := registry.Ref{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	served, err := s.reg.Serving(ref)
	if err != nil {
		s.writeError(w, http.StatusNotFound, err.Error()+
			" (the scaler learns a ScaledObject when KEDA first calls it for that object,"+
			" and forgets it when its sampler is stopped after idling)")
		return registry.Served{}, false
	}
	return served, true
}

// retryAfter tells a client refused for staleness to come back after one
// sample interval, when a fresh sample is due.
func retryAfter(w http.ResponseWriter, snap *sampling.Snapshot) {
	secs := max(1, int(math.Ceil(snap.Interval.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
}
