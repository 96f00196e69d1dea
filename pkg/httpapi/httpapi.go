// Package httpapi is Barometer's HTTP surface: the scaling signal as JSON
// (docs/semantics.md, "HTTP shape of /scale"), the running targets, Prometheus metrics,
// the process probes and the workload's health projection. Every handler
// reads published snapshots only; none of them samples.
package httpapi

import (
	"log/slog"
	"net/http"
	"path"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/health"
	"github.com/barometer-scaler/barometer/pkg/registry"
)

// Config wires the HTTP surface.
type Config struct {
	// Registry holds the targets; required.
	Registry *registry.Registry
	// Metrics serves /metrics (metrics.Metrics.Handler); nil leaves
	// /metrics unrouted.
	Metrics http.Handler
	// Draining reports that the process is shutting down, which takes
	// /readyz down; nil means never.
	Draining func() bool
	// Logger receives errors the handlers cannot report to the client;
	// nil discards them.
	Logger *slog.Logger
	// Status serves the status page, GET /status and
	// /status/{namespace}/{name} (statuspage.New); nil leaves them
	// unrouted.
	Status http.Handler
	// Health tunes the /health/signal projection. The zero value means
	// health.DefaultOptions(); to turn the compute tiers off, set
	// ComputeTiers false with any non-zero threshold.
	Health health.Options
}

// server holds the defaulted configuration the handlers share. It is
// immutable after New, so handlers run concurrently without locks.
type server struct {
	reg      *registry.Registry
	draining func() bool
	log      *slog.Logger
	health   health.Options
}

// New returns the HTTP handler:
//
//	GET /scale                          the default target's signal
//	GET /scale/{namespace}/{name}       the signal serving that ScaledObject
//	GET /targets                        the running targets
//	GET /events                         every target's recent decisions, newest last
//	GET /events/{namespace}/{name}      the decisions of the target serving that ScaledObject
//	GET /metrics                        Prometheus metrics (when configured)
//	GET /livez, /readyz                 process probes
//	GET /health/signal                  the default target's health projection
//	GET /health/signal/{namespace}/{name}
//	GET /status, /status/{namespace}/{name}  the status page, for people (when configured)
//
// Every route answers GET and HEAD; other methods get 405, unknown paths
// 404, both as {"error": "..."}. New panics when cfg.Registry is nil: that
// is a wiring mistake, not a runtime condition.
func New(cfg Config) http.Handler {
	if cfg.Registry == nil {
		panic("httpapi: Config.Registry is nil")
	}
	s := &server{reg: cfg.Registry, draining: cfg.Draining, log: cfg.Logger, health: cfg.Health}
	if s.draining == nil {
		s.draining = func() bool { return false }
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.health == (health.Options{}) {
		s.health = health.DefaultOptions()
	}

	mux := http.NewServeMux()
	route := func(pattern string, h http.Handler) { mux.Handle(pattern, s.readOnly(h)) }
	perTarget := func(base string, serve func(http.ResponseWriter, registry.Served)) {
		route(base, s.defaultTarget(base, serve))
		route(base+"/{namespace}/{name}", s.refTarget(serve))
	}
	perTarget("/scale", s.serveScale)
	route("/targets", http.HandlerFunc(s.targets))
	route("/events", http.HandlerFunc(s.eventsAll))
	route("/events/{namespace}/{name}", http.HandlerFunc(s.eventsRef))
	if cfg.Metrics != nil {
		route("/metrics", cfg.Metrics)
	}
	route("/livez", s.livez())
	route("/readyz", s.readyz())
	perTarget("/health/signal", s.serveSignalHealth)
	if cfg.Status != nil {
		route("/status", cfg.Status)
		route("/status/{namespace}/{name}", cfg.Status)
		route("/status/default", cfg.Status)
	}
	// The catch-all answers every other path, whatever the method, so that
	// an unknown path is a JSON 404 rather than ServeMux's plain text.
	mux.HandleFunc("/", s.notFound)
	return s.canonical(mux)
}

func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path+
		" (endpoints: /scale, /scale/{namespace}/{name}, /targets, /events, /events/{namespace}/{name}, /metrics, /livez, /readyz, /health/signal)")
}

// canonical answers, as JSON, the requests ServeMux would answer itself in
// plain text: a path that is not clean ("//", "." or ".." segments), which
// it redirects, and CONNECT, which it routes by host. Neither is a request
// this read-only API serves, and a redirect would send a client that
// expects JSON (KEDA's metrics-api trigger) to another endpoint's answer.
func (s *server) canonical(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case r.Method == http.MethodConnect:
			s.readOnly(nil).ServeHTTP(w, r)
		case p == "" || p[0] != '/' || cleanPath(p) != p:
			s.notFound(w, r)
		default:
			mux.ServeHTTP(w, r)
		}
	})
}

// cleanPath is p as ServeMux cleans it before routing: path.Clean,
// keeping a trailing slash.
func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
