// Package store keeps the OTLP metric points pushed to the scaler, in
// memory, bounded, per namespace, per replica (a pod) and per series, and
// answers the reads of the otlp pressure source.
//
// A push writes a namespace only if its credential's Grant allows it: the
// resource's k8s.namespace.name is checked against the grant, never
// trusted, and a read names its namespace, so nothing pushed for one
// namespace is visible to another. Every bound (series in all, series per
// namespace, estimated memory, points per request) refuses what would
// cross it and counts the refusal; see docs/otlp.md.
package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The resource attributes the store reads.
const (
	AttrNamespace  = "k8s.namespace.name"
	AttrPod        = "k8s.pod.name"
	AttrInstanceID = "service.instance.id"
)

// WorkloadAttributes are the resource attributes a workload selector may
// name. A replica records the ones its pushes carry.
var WorkloadAttributes = []string{
	"k8s.deployment.name",
	"k8s.statefulset.name",
	"k8s.daemonset.name",
	"k8s.replicaset.name",
	"k8s.job.name",
	"k8s.cronjob.name",
	"service.name",
	"service.namespace",
}

// Options bound the store. Zero fields take the defaults of DefaultOptions.
type Options struct {
	// MaxSeries caps the series kept in all, MaxSeriesPerNamespace one
	// namespace's.
	MaxSeries             int
	MaxSeriesPerNamespace int
	// MaxMemoryBytes caps the store's estimated memory (each series
	// reserves its largest size when created), MaxMemoryBytesPerNamespace
	// one namespace's (default a quarter of MaxMemoryBytes).
	MaxMemoryBytes             int64
	MaxMemoryBytesPerNamespace int64
	// GuaranteedSeries and GuaranteedMemoryBytes are what every namespace
	// may hold however full the store is: the last ReserveShare of
	// MaxSeries and MaxMemoryBytes is kept for namespaces below them, so
	// tenants at their caps cannot take a newcomer's first series.
	GuaranteedSeries      int
	GuaranteedMemoryBytes int64
	// MaxPointsPerRequest caps the data points of one push: a default
	// collector batch (8,192) and the request merged into it last.
	MaxPointsPerRequest int
	// HistoryPoints is how many points a counter or histogram series keeps
	// to rate over a window, at least HistoryResolution apart; with the
	// defaults a window of up to a minute is always covered.
	HistoryPoints     int
	HistoryResolution time.Duration
	// Retention forgets a series the store has not written for this long,
	// and a replica with no series left.
	Retention time.Duration
	// MaxClockSkew refuses points timed further than this in the future: a
	// future point would look fresh long after its replica stopped. One
	// timed in the future within it is stored at its receive time.
	MaxClockSkew time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// DefaultMaxMemoryBytes is the store's default memory cap: with the
// receiver's worst case and the process' own, it fits the chart's 256 MiB
// pod (docs/otlp.md, "Memory").
const DefaultMaxMemoryBytes = 64 << 20

// ReserveShare is the part of the store's series and memory caps kept
// for namespaces below their guaranteed share: an eighth.
const ReserveShare = 8

// DefaultOptions are the bounds used where Options leave a field zero.
func DefaultOptions() Options {
	return Options{
		MaxSeries:             100_000,
		MaxSeriesPerNamespace: 20_000,
		MaxMemoryBytes:        DefaultMaxMemoryBytes,
		GuaranteedSeries:      1_000,
		GuaranteedMemoryBytes: 1 << 20,
		MaxPointsPerRequest:   10_000,
		HistoryPoints:         32,
		HistoryResolution:     2 * time.Second,
		Retention:             10 * time.Minute,
		MaxClockSkew:          time.Minute,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&o.MaxSeries, d.MaxSeries)
	set(&o.MaxSeriesPerNamespace, d.MaxSeriesPerNamespace)
	set(&o.MaxPointsPerRequest, d.MaxPointsPerRequest)
	set(&o.HistoryPoints, d.HistoryPoints)
	set(&o.GuaranteedSeries, d.GuaranteedSeries)
	if o.MaxMemoryBytes <= 0 {
		o.MaxMemoryBytes = d.MaxMemoryBytes
	}
	if o.MaxMemoryBytesPerNamespace <= 0 {
		o.MaxMemoryBytesPerNamespace = o.MaxMemoryBytes / 4
	}
	if o.GuaranteedMemoryBytes <= 0 {
		o.GuaranteedMemoryBytes = d.GuaranteedMemoryBytes
	}
	if o.HistoryResolution <= 0 {
		o.HistoryResolution = d.HistoryResolution
	}
	if o.Retention <= 0 {
		o.Retention = d.Retention
	}
	if o.MaxClockSkew <= 0 {
		o.MaxClockSkew = d.MaxClockSkew
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Store is the pushed metrics. It is safe for concurrent use.
type Store struct {
	opts Options

	mu         sync.Mutex // guards namespaces and lastSweep
	namespaces map[string]*namespace
	lastSweep  time.Time

	series atomic.Int64
	memory atomic.Int64
	// heldSince is HeldSince, Unix nanoseconds.
	heldSince atomic.Int64

	m *metrics
}

type namespace struct {
	mu       sync.Mutex
	replicas map[string]*replica
	series   int
	memory   int64 // estimated bytes, as Store.memory counts them
	dead     bool  // swept out of Store.namespaces
}

// replica is one pod (or service instance) of a namespace.
type replica struct {
	name     string
	pod      bool // name is the k8s.pod.name, not a service.instance.id
	workload map[string]string
	series   map[string]*series
	newest   int64 // the newest point of any series, Unix nanoseconds
}

// New returns an empty store whose metrics are registered on reg.
func New(opts Options, reg prometheus.Registerer) (*Store, error) {
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Store{opts: opts.withDefaults(), namespaces: map[string]*namespace{}, m: m}
	s.heldSince.Store(s.opts.Now().UnixNano())
	return s, nil
}

// Options returns the bounds in force.
func (s *Store) Options() Options { return s.opts }

// ErrTooManyPoints refuses a whole push over MaxPointsPerRequest.
var ErrTooManyPoints = errors.New("too many data points in one request")

// lockNS returns the namespace, created if need be, locked.
func (s *Store) lockNS(name string) *namespace {
	for {
		n := s.ns(name, true)
		n.mu.Lock()
		if !n.dead {
			return n
		}
		n.mu.Unlock()
	}
}

func (s *Store) ns(name string, create bool) *namespace {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.namespaces[name]
	if n == nil && create {
		n = &namespace{replicas: map[string]*replica{}}
		s.namespaces[name] = n
	}
	return n
}

// Sweep forgets series not written for Retention, and replicas left
// without series. Ingest calls it at most once a Retention/10; a caller
// may call it too.
func (s *Store) Sweep() {
	now := s.opts.Now()
	s.mu.Lock()
	s.lastSweep = now
	names := make([]string, 0, len(s.namespaces))
	for name := range s.namespaces {
		names = append(names, name)
	}
	s.mu.Unlock()
	cutoff := now.Add(-s.opts.Retention).UnixNano()
	for _, name := range names {
		n := s.ns(name, false)
		if n == nil {
			continue
		}
		n.mu.Lock()
		for rname, r := range n.replicas {
			for key, x := range r.series {
				if x.touched < cutoff {
					s.drop(n, r, key, x)
				}
			}
			if len(r.series) == 0 {
				delete(n.replicas, rname)
				s.release(n, replicaOverhead)
			}
		}
		empty := len(n.replicas) == 0
		n.mu.Unlock()
		if empty {
			s.mu.Lock()
			n.mu.Lock()
			if len(n.replicas) == 0 {
				n.dead = true // a writer holding n looks it up again
				delete(s.namespaces, name)
			}
			n.mu.Unlock()
			s.mu.Unlock()
		}
	}
	s.m.series.Set(float64(s.series.Load()))
	s.m.memory.Set(float64(s.memory.Load()))
}

func (s *Store) maybeSweep(now time.Time) {
	s.mu.Lock()
	due := now.Sub(s.lastSweep) >= s.opts.Retention/10
	s.mu.Unlock()
	if due {
		s.Sweep()
	}
}

func (s *Store) drop(n *namespace, r *replica, key string, x *series) {
	delete(r.series, key)
	n.series--
	s.series.Add(-1)
	s.release(n, x.cost)
}

// release gives back bytes of n's memory.
func (s *Store) release(n *namespace, bytes int64) {
	n.memory -= bytes
	s.memory.Add(-bytes)
}

// The estimated sizes behind the memory cap: a series' struct, map entry
// and slices, and one kept point.
const (
	seriesOverhead  = 320
	replicaOverhead = 512
	sampleSize      = 48
)

// reserve accounts for a cost of delta bytes in n (one series more when
// newSeries), refusing it when a cap would be crossed: the namespace's
// own, or the store's. The store's last ReserveShare is for a namespace
// still within its guaranteed series and memory: past them, the store's
// caps stop short of it. Called with n.mu held.
func (s *Store) reserve(n *namespace, delta int64, newSeries bool) string {
	if newSeries {
		if n.series >= s.opts.MaxSeriesPerNamespace {
			return reasonNamespaceSeries
		}
		ceiling := int64(s.opts.MaxSeries)
		if n.series >= s.opts.GuaranteedSeries {
			ceiling -= ceiling / ReserveShare
		}
		if s.series.Add(1) > ceiling {
			s.series.Add(-1)
			return reasonSeries
		}
	}
	if delta > 0 {
		reason := ""
		ceiling := s.opts.MaxMemoryBytes
		if n.memory+delta > s.opts.GuaranteedMemoryBytes {
			ceiling -= ceiling / ReserveShare
		}
		switch {
		case n.memory+delta > s.opts.MaxMemoryBytesPerNamespace:
			reason = reasonNamespaceMemory
		case s.memory.Add(delta) > ceiling:
			s.memory.Add(-delta)
			reason = reasonMemory
		}
		if reason != "" {
			if newSeries {
				s.series.Add(-1)
			}
			return reason
		}
	} else {
		s.memory.Add(delta)
	}
	n.memory += delta
	if newSeries {
		n.series++
	}
	return ""
}

func (s *Store) seriesCost(key string, kind Kind, buckets int) int64 {
	points := int64(1)
	if kind != Gauge {
		points = int64(s.opts.HistoryPoints) + 2 // the history, raw and offset
	}
	return seriesOverhead + 2*int64(len(key)) + points*(sampleSize+8*int64(buckets))
}

// The reasons a point is refused or ignored, as counted.
const (
	reasonNamespace       = "namespace"
	reasonNoReplica       = "no_replica"
	reasonSeries          = "series_cap"
	reasonNamespaceSeries = "namespace_series_cap"
	reasonMemory          = "memory_cap"
	reasonNamespaceMemory = "namespace_memory_cap"
	reasonTimestamp       = "bad_timestamp"
	reasonFuture          = "future_timestamp"
	reasonUnsupported     = "unsupported_type"
	reasonBadBuckets      = "bad_buckets"
	reasonOutOfOrder      = "out_of_order"
	reasonDuplicate       = "duplicate"
	reasonNoValue         = "no_value"
	reasonNaN             = "nan"
	reasonInfinite        = "infinite"
	reasonNegative        = "negative"
)

var reasonText = map[string]string{
	reasonNamespace:       "resource namespace (" + AttrNamespace + ") not allowed for this credential",
	reasonNoReplica:       "resource has neither " + AttrPod + " nor " + AttrInstanceID,
	reasonSeries:          "the store's series cap is reached",
	reasonNamespaceSeries: "the namespace's series cap is reached",
	reasonMemory:          "the store's memory cap is reached",
	reasonNamespaceMemory: "the namespace's memory cap is reached",
	reasonTimestamp:       "data point without time_unix_nano",
	reasonFuture:          "data point timed in the future beyond the allowed clock skew",
	reasonUnsupported:     "exponential histograms are not read",
	reasonBadBuckets:      "histogram bucket_counts do not match explicit_bounds",
	reasonNaN:             "value is NaN",
	reasonInfinite:        "value is infinite",
	reasonNegative:        "value is negative (no pressure, count or limit is)",
}

type metrics struct {
	accepted prometheus.Counter
	retimed  prometheus.Counter
	rejected *prometheus.CounterVec
	ignored  *prometheus.CounterVec
	series   prometheus.Gauge
	memory   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "barometer_otlp_points_accepted_total",
			Help: "OTLP data points stored.",
		}),
		retimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "barometer_otlp_points_retimed_total",
			Help: "OTLP data points timed in the future within the allowed clock skew, stored at their receive time.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_otlp_points_rejected_total",
			Help: "OTLP data points refused, by reason; answered as rejected_data_points.",
		}, []string{"reason"}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_otlp_points_ignored_total",
			Help: "OTLP data points ignored as out of order, duplicate or flagged as having no value.",
		}, []string{"reason"}),
		series: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "barometer_otlp_series",
			Help: "Series held by the OTLP store.",
		}),
		memory: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "barometer_otlp_memory_bytes",
			Help: "Estimated memory held by the OTLP store's series.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.accepted, m.retimed, m.rejected, m.ignored, m.series, m.memory} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("otlp store metrics: %w", err)
			}
		}
	}
	return m, nil
}
