// Package metrics exposes Barometer to Prometheus: every running target's
// signal and sampling facts, read from its latest snapshot at scrape time,
// per-RPC counts and latencies of the gRPC server, and the expiry of its TLS
// certificate.
//
// Everything lives on a private prometheus.Registry owned by Metrics, never
// on the global default registry, so two servers (or two tests) in one
// process do not collide.
package metrics

import (
	"net/http"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/barometer-scaler/barometer/pkg/registry"
)

// Namespace prefixes every metric Barometer defines.
const Namespace = "barometer"

// Metrics owns the scaler's Prometheus target. It is safe for concurrent
// use: the HTTP server scrapes it while gRPC handlers record RPCs.
type Metrics struct {
	registry *prometheus.Registry
	// gatherer is the registry and the targets' signals (signalGatherer).
	gatherer   prometheus.Gatherers
	grpc       *GRPCMetrics
	certExpiry *certExpiry
}

// New returns the metrics of a server whose targets live in reg. The
// signal's age and staleness are measured by reg's clock, the one every
// surface uses, so /metrics and /scale agree on what is stale.
func New(reg *registry.Registry) *Metrics {
	m := &Metrics{registry: prometheus.NewRegistry(), grpc: NewGRPCMetrics(), certExpiry: newCertExpiry()}
	m.registry.MustRegister(
		// go_gc_heap_live_bytes beside the usual memstats: the heap the
		// last GC marked live is what a leak shows in, where heap in use
		// also counts the garbage not yet collected (up to GOGC% more).
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
		m.grpc,
		m.certExpiry,
	)
	m.gatherer = prometheus.Gatherers{m.registry, &signalGatherer{reg: reg}}
	return m
}

// Register adds another package's collector to the registry (the
// connection profiles' reload errors, say), so that it is served with the
// rest and checked against it for duplicates (against the signal's
// families at each scrape, which then reports the clash).
func (m *Metrics) Register(c prometheus.Collector) error { return m.registry.Register(c) }

// Handler serves the registry in the Prometheus exposition formats.
//
// A collection error is served as a partial scrape (and counted in
// promhttp_metric_handler_errors_total) rather than a 500: losing every
// metric because one was bad would hide exactly the scrape an operator
// needs.
//
// The exposition is served uncompressed, whatever the scraper accepts:
// gzip was five times the cost of the rest of a scrape (at 1,000 targets
// 300 ms of CPU against 60, bench_test.go), CPU taken from the gRPC reads
// beside it, to save bandwidth a cluster network does not miss (3 MB per
// scrape interval at that size, 20 kB for a target or two).
func (m *Metrics) Handler() http.Handler {
	return promhttp.InstrumentMetricHandler(m.registry, promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{
		ErrorHandling:      promhttp.ContinueOnError,
		Registry:           m.registry,
		DisableCompression: true,
	}))
}

// ServerOptions installs the gRPC metrics' interceptors (GRPCMetrics).
func (m *Metrics) ServerOptions() []grpc.ServerOption { return m.grpc.ServerOptions() }

// InitializeGRPC resolves the series of every method registered on s, at
// zero (GRPCMetrics.Initialize).
func (m *Metrics) InitializeGRPC(s reflection.ServiceInfoProvider) { m.grpc.Initialize(s) }

// Gatherer reads everything /metrics serves, for tests and diagnostics.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.gatherer }
