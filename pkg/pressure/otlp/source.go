// Package otlp is a pressure.Source that reads what a workload's replicas
// push over OTLP, from the in-memory store the receiver writes (packages
// store and receiver below this one). The pushed metrics carry the names
// of the pressure exposition contract (package exposition,
// docs/exposition.md), so a workload that exposes them for scraping can
// push the same names unchanged, and they are folded by the same rules as
// the scrape source's; docs/otlp.md is the mapping.
//
// A source reads memory only, so a sampler may ask it every second. A
// replica is a pod (k8s.pod.name, else service.instance.id); one whose
// newest point is older than MaxAge is left out and named, as the scrape
// source names a replica that stopped answering. The Observation's
// MeasuredAt is the data points' own time.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// Config is which workload's pushes one source reads.
type Config struct {
	// Namespace is the namespace of the ScaledObject the source serves: a
	// source reads nothing pushed for another namespace. It must come from
	// the ScaledObject itself, never from its metadata.
	Namespace string
	// Selector picks the workload by resource attributes, each one of
	// store.WorkloadAttributes (k8s.deployment.name, service.name, ...).
	Selector map[string]string
	// Window is the span a counter's rate is read over, back from its
	// newest point (default 30s; at most what the store's history covers).
	Window time.Duration
	// MaxAge leaves out a replica whose newest point is older (default
	// 30s): it stopped pushing. Set it to a few export intervals.
	MaxAge time.Duration
	// Names are the contract's metric names in force (renaming keys).
	Names exposition.Names
	// CPULimitCores is the CPU limit of a replica that pushes no limit
	// gauge; 0 leaves such a replica's CPU unmeasured.
	CPULimitCores float64
	// HeldSince, when set, is when the store began to hold every push made
	// to the scaler (store.Store.HeldSince): its start, or earlier when it
	// took a peer's state. Until MaxAge after it, a replica that pushed
	// before may not have pushed again, so the source cannot tell the
	// pool's size from the pushes alone: without a Pool it fails its
	// samples until then (the previous signal stands), rather than read a
	// partial pool as a smaller one. nil waits for nothing.
	HeldSince func() time.Time
	// Pool, when set with PoolService, reads the workload's pods from the
	// EndpointSlices of PoolService, a Service of Namespace: the ready
	// ones are the pool, and a sample waits for each of them to push
	// (docs/otlp.md, "The pool's size").
	Pool        discovery.Discovery
	PoolService string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// The defaults of Config's durations.
const (
	DefaultWindow = 30 * time.Second
	DefaultMaxAge = 30 * time.Second
)

// Source reads one workload's pushes from a store.
type Source struct {
	store *store.Store
	cfg   Config
	want  map[string]bool
	log   *slog.Logger

	mu    sync.Mutex
	queue exposition.QueueCounters
	seen  map[string]time.Time // when each ready pod of the pool was first seen ready

	poolMu      sync.Mutex
	poolNS      discovery.Namespace
	poolRelease func()
}

var _ pressure.Source = (*Source)(nil)

// New checks cfg and returns the source. Its errors name the field at
// fault and what is allowed.
func New(st *store.Store, cfg Config, logger *slog.Logger) (*Source, error) {
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.check(st.Options()); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range cfg.Names.Families() {
		want[n] = true
	}
	return &Source{store: st, cfg: cfg, want: want, log: logger, seen: map[string]time.Time{}}, nil
}

func (c Config) check(o store.Options) error {
	if c.Namespace == "" {
		return errors.New("otlp source: no namespace")
	}
	if len(c.Selector) == 0 {
		return fmt.Errorf("selector: empty (allowed: one or more of %s = value)", strings.Join(store.WorkloadAttributes, ", "))
	}
	for k, v := range c.Selector {
		if !slices.Contains(store.WorkloadAttributes, k) {
			return fmt.Errorf("selector: attribute %q (allowed: %s)", k, strings.Join(store.WorkloadAttributes, ", "))
		}
		if v == "" {
			return fmt.Errorf("selector: attribute %q has an empty value", k)
		}
	}
	// The store keeps HistoryPoints at least HistoryResolution apart, so
	// it always covers this span.
	covered := time.Duration(o.HistoryPoints-1) * o.HistoryResolution
	if c.Window < 0 || c.Window > covered {
		return fmt.Errorf("window: %s (allowed: above 0 and at most %s, what the OTLP store keeps)", c.Window, covered)
	}
	if c.MaxAge < 0 || c.MaxAge > o.Retention {
		return fmt.Errorf("maxAge: %s (allowed: above 0 and at most %s, the OTLP store's retention)", c.MaxAge, o.Retention)
	}
	if c.PoolService != "" && c.Pool == nil {
		return fmt.Errorf("poolService %q: the scaler cannot read Kubernetes", c.PoolService)
	}
	if c.CPULimitCores < 0 {
		return fmt.Errorf("cpuLimitCores: %v (allowed: 0 or more)", c.CPULimitCores)
	}
	return nil
}

// Observe reads the workload's replicas as they last pushed. It fails
// when no replica pushed within MaxAge, and while the pool may be larger
// than the replicas heard (see Config.HeldSince and Config.Pool).
func (s *Source) Observe(ctx context.Context) (pressure.Observation, error) {
	if err := ctx.Err(); err != nil {
		return pressure.Observation{}, err
	}
	now := s.cfg.Now()
	var pods *pool
	if s.cfg.PoolService != "" {
		var err error
		if pods, err = s.readPool(ctx); err != nil {
			return pressure.Observation{}, fmt.Errorf("otlp: poolService: %w", err)
		}
	}
	replicas := s.store.Read(store.Query{Namespace: s.cfg.Namespace, Selector: s.cfg.Selector, Metrics: s.want, Window: s.cfg.Window})
	s.mu.Lock()
	defer s.mu.Unlock()
	obs := s.fold(replicas, pods, now)
	if err := s.waitForPool(replicas, pods, now, &obs); err != nil {
		return pressure.Observation{}, err
	}
	if len(obs.Replicas) == 0 {
		if len(obs.Missing) == 0 {
			return obs, fmt.Errorf("otlp: no replica of %s in namespace %s has pushed", s.selector(), s.cfg.Namespace)
		}
		return obs, fmt.Errorf("otlp: no replica of %s in namespace %s pushed the contract's metrics within maxAge %s: %w",
			s.selector(), s.cfg.Namespace, s.cfg.MaxAge, errors.Join(missingErrs(obs.Missing)...))
	}
	return obs, nil
}

func (s *Source) selector() string {
	keys := make([]string, 0, len(s.cfg.Selector))
	for k, v := range s.cfg.Selector {
		keys = append(keys, fmt.Sprintf("%s=%q", k, v))
	}
	slices.Sort(keys)
	return "{" + strings.Join(keys, ",") + "}"
}

func missingErrs(m []pressure.MissingReplica) []error {
	out := make([]error, len(m))
	for i, r := range m {
		out[i] = fmt.Errorf("%s: %w", r.Name, r.Err)
	}
	return out
}
