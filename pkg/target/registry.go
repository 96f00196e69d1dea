package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/target/decide"
)

// Ref names a ScaledObject.
type Ref struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Target is one running sampler and the metadata that asked for it. Targets
// are shared: every ScaledObject whose metadata gives the same SamplerKey
// reads the same Target.
type Target struct {
	Key string
	// SourceKey is Metadata.Source.Key(), computed once: it is fixed for
	// the target's life and costly for a long scrape target list.
	SourceKey string
	Metadata  Metadata
	sampler   *signal.Sampler
	cancel    context.CancelFunc
	done      chan struct{}
	lastUsed  atomic.Int64 // unix nanoseconds
	pinned    bool         // the default target is never reaped
	streams   atomic.Int32 // open streams; a target with one is never reaped
	source    pressure.Source
	runner    *decide.Runner
}

// Policy is the name of the target's policy (signal.PolicyPressure for the
// pressure signal).
func (t *Target) Policy() string { return t.runner.Policy() }

// Decisions counts the target's decisions by action (scale_up, scale_down,
// no-op), every action present.
func (t *Target) Decisions() map[string]uint64 { return t.runner.Decisions() }

// Source returns the target's pressure source, for surfaces that report
// source-specific facts (such as per-replica scrape errors).
func (t *Target) Source() pressure.Source { return t.source }

// Load returns the latest snapshot (one atomic load).
func (t *Target) Load() *signal.Snapshot { return t.sampler.Load() }

// WaitFirst waits up to max for the first sample and returns the snapshot
// then in force, warming up or not.
func (t *Target) WaitFirst(ctx context.Context, max time.Duration) *signal.Snapshot {
	timer := time.NewTimer(max)
	defer timer.Stop()
	for {
		snap := t.Load()
		if !snap.Signal.WarmingUp() || snap.Samples > 0 && snap.LastErr != nil {
			return snap
		}
		select {
		case <-snap.Next():
		case <-timer.C:
			return t.Load()
		case <-ctx.Done():
			return t.Load()
		}
	}
}

// Config wires a Registry.
type Config struct {
	Sources *Sources
	// DefaultInterval is the sample interval when metadata sets none.
	DefaultInterval time.Duration
	// IdleTimeout stops a sampler nobody has read for this long.
	IdleTimeout time.Duration
	// AuditSize is how many decisions the audit trail keeps per target;
	// <= 0 means policy.DefaultAuditSize.
	AuditSize int
	Clock     signal.Clock
	Logger    *slog.Logger
}

// Registry owns the samplers: it starts one on first use, shares it between
// identical configurations and stops it once idle. Safe for concurrent use.
type Registry struct {
	cfg    Config
	ctx    context.Context
	engine *decide.Engine

	mu      sync.Mutex
	targets map[string]*Target
	refs    map[Ref]map[string]time.Time // ScaledObject -> its triggers' keys, when last acquired
	def     *Target
}

// DefaultIdleTimeout is how long an unread sampler keeps running.
const DefaultIdleTimeout = 10 * time.Minute

// NewRegistry returns a registry whose samplers live until ctx ends.
func NewRegistry(ctx context.Context, cfg Config) *Registry {
	if cfg.DefaultInterval <= 0 {
		cfg.DefaultInterval = signal.DefaultSampleInterval
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = signal.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Registry{cfg: cfg, ctx: ctx, engine: decide.NewEngine(decide.Config{AuditSize: cfg.AuditSize}),
		targets: map[string]*Target{}, refs: map[Ref]map[string]time.Time{}}
}

// Parse reads a ScaledObject's metadata with this registry's sources.
func (r *Registry) Parse(raw map[string]string) (Metadata, error) {
	return r.cfg.Sources.Parse(raw, r.cfg.DefaultInterval)
}

// Acquire returns the target for md, starting its sampler if needed, and
// records that ref uses it. A target whose pool is decided with other
// options is refused with a *MetadataError on the pool key.
func (r *Registry) Acquire(ref Ref, md Metadata) (*Target, error) {
	key := md.SamplerKey()
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.targets[key]
	if !ok {
		var err error
		if t, err = r.start(key, md); err != nil {
			return nil, err
		}
	}
	t.lastUsed.Store(r.cfg.Clock.Now().UnixNano())
	if ref != (Ref{}) {
		if r.refs[ref] == nil {
			r.refs[ref] = map[string]time.Time{}
		}
		r.refs[ref][key] = r.cfg.Clock.Now()
	}
	return t, nil
}

// Hold keeps t from being reaped while a stream reads it, however long the
// stream goes without a new snapshot; call the returned func when the stream
// ends.
func (r *Registry) Hold(t *Target) (release func()) {
	t.streams.Add(1)
	return func() {
		r.Touch(t)
		t.streams.Add(-1)
	}
}

// SetDefault starts the target served at /scale; it is never reaped.
func (r *Registry) SetDefault(md Metadata) (*Target, error) {
	t, err := r.Acquire(Ref{}, md)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	t.pinned, r.def = true, t
	r.mu.Unlock()
	return t, nil
}

// Default returns the default target, nil when none is set.
func (r *Registry) Default() *Target {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.def
}

// ErrUnknownRef is returned by Lookup for a ScaledObject never seen (or
// whose target was reaped).
var ErrUnknownRef = errors.New("no target serves this ScaledObject")

// refActive is how recently KEDA must have asked for a ScaledObject's
// target for Lookup to count it as in use: a few of KEDA's polls.
const refActive = time.Minute

// Lookup returns the target serving ref. A ScaledObject can have several
// targets: several Barometer triggers, or a trigger whose settings changed
// (the old target runs until reaped). Lookup returns the first by key among
// those KEDA asked for within refActive, so two live triggers always give
// the same answer; when none is that recent, the one asked for last.
// /targets lists them all.
func (r *Registry) Lookup(ref Ref) (*Target, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Clock.Now()
	var best string
	var bestAt time.Time
	bestActive := false
	for k, at := range r.refs[ref] {
		if _, ok := r.targets[k]; !ok {
			continue
		}
		active := now.Sub(at) <= refActive
		switch {
		case best == "",
			active && !bestActive,
			active && bestActive && k < best,
			!active && !bestActive && at.After(bestAt):
			best, bestAt, bestActive = k, at, active
		}
	}
	if best == "" {
		return nil, fmt.Errorf("%w: %s", ErrUnknownRef, ref)
	}
	return r.targets[best], nil
}

// Info describes a target for listings.
type Info struct {
	Key        string    `json:"key"`
	Source     string    `json:"source"`
	Interval   string    `json:"sampleInterval"`
	Policy     string    `json:"policy"`
	Default    bool      `json:"default"`
	LastUsed   time.Time `json:"lastUsed"`
	ScaledObjs []Ref     `json:"scaledObjects"`
}

// Targets returns every running target, sorted by key: the cheap walk for
// readers (metrics) that need no ScaledObject listing.
func (r *Registry) Targets() []*Target {
	r.mu.Lock()
	out := make([]*Target, 0, len(r.targets))
	for _, t := range r.targets {
		out = append(out, t)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b *Target) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// List returns every running target, sorted by key.
func (r *Registry) List() []Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Info, 0, len(r.targets))
	for key, t := range r.targets {
		info := Info{
			Key: key, Source: t.SourceKey, Interval: t.Metadata.Interval.String(), Policy: t.Policy(),
			Default: t == r.def, LastUsed: time.Unix(0, t.lastUsed.Load()).UTC(), ScaledObjs: []Ref{},
		}
		for ref, keys := range r.refs {
			if _, ok := keys[key]; ok {
				info.ScaledObjs = append(info.ScaledObjs, ref)
			}
		}
		slices.SortFunc(info.ScaledObjs, func(a, b Ref) int { return strings.Compare(a.String(), b.String()) })
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// ReapIdle stops samplers unread for longer than the idle timeout and
// forgets the ScaledObjects that used them. Run calls it periodically.
func (r *Registry) ReapIdle() int {
	cutoff := r.cfg.Clock.Now().Add(-r.cfg.IdleTimeout).UnixNano()
	r.mu.Lock()
	var stopped []*Target
	for key, t := range r.targets {
		if t.pinned || t.streams.Load() > 0 || t.lastUsed.Load() >= cutoff {
			continue
		}
		delete(r.targets, key)
		for ref, keys := range r.refs {
			delete(keys, key)
			if len(keys) == 0 {
				delete(r.refs, ref)
			}
		}
		stopped = append(stopped, t)
	}
	r.mu.Unlock()
	for _, t := range stopped {
		t.cancel()
		<-t.done
		r.cfg.Logger.Info("stopped idle sampler", "target", t.Key)
	}
	return len(stopped)
}

// Run reaps idle samplers until ctx ends, then waits for every sampler to
// stop.
func (r *Registry) Run(ctx context.Context) {
	ticks, stop := r.cfg.Clock.NewTicker(r.cfg.IdleTimeout / 4)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			r.stopAll()
			return
		case <-ticks:
			r.ReapIdle()
		}
	}
}

func (r *Registry) stopAll() {
	r.mu.Lock()
	targets := make([]*Target, 0, len(r.targets))
	for _, t := range r.targets {
		targets = append(targets, t)
	}
	r.mu.Unlock()
	for _, t := range targets {
		t.cancel()
		<-t.done
	}
}

// start builds the source and runs its sampler; r.mu is held.
func (r *Registry) start(key string, md Metadata) (*Target, error) {
	logger := r.cfg.Logger.With("target", key)
	runner, err := r.engine.Runner(key, md.Policy, md.Signal, md.Interval, r.cfg.Clock.Now(), logger)
	var conflict *decide.PoolConflictError
	if errors.As(err, &conflict) {
		return nil, &MetadataError{Key: "pool", Value: conflict.Pool, Allowed: conflict.Error()}
	}
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", md.Policy.Policy, err)
	}
	src, err := md.Source.New(logger)
	if err != nil {
		runner.Close()
		return nil, fmt.Errorf("start source %s: %w", md.Source.Key(), err)
	}
	sampler := signal.NewSampler(signal.SamplerConfig{
		Source:   src,
		Compute:  pressure.ComputeCollector{ActivationWorkingSetTarget: md.ActivationWorkingSetTarget},
		Storage:  pressure.NewStorageCollector(pressure.DefaultStorageOptions()),
		Options:  samplerOptions(md),
		Decider:  runner,
		Interval: md.Interval,
		Clock:    r.cfg.Clock,
		Logger:   logger,
	})
	ctx, cancel := context.WithCancel(r.ctx)
	t := &Target{Key: key, SourceKey: md.Source.Key(), Metadata: md, sampler: sampler, cancel: cancel, done: make(chan struct{}), source: src, runner: runner}
	go func() {
		defer close(t.done)
		sampler.Run(ctx)
		// Only now, with no Decide running: leave the pool, drop the
		// launches and the events.
		runner.Close()
		// A source may hold connections (kept-alive scrapes); release them
		// as soon as nobody samples it.
		if c, ok := src.(io.Closer); ok {
			if err := c.Close(); err != nil {
				logger.Warn("closing source", "err", err)
			}
		}
	}()
	r.targets[key] = t
	logger.Info("started sampler", "interval", md.Interval, "policy", md.Policy.Policy)
	return t, nil
}

// Touch marks the target used now, so the reaper keeps it.
func (r *Registry) Touch(t *Target) { t.lastUsed.Store(r.cfg.Clock.Now().UnixNano()) }

// Events returns the decisions the audit trail keeps for t, oldest first.
func (r *Registry) Events(t *Target) []policy.Event { return r.engine.Events(t.Key) }

// AllEvents returns every target's kept decisions, newest last.
func (r *Registry) AllEvents() []policy.Event { return r.engine.AllEvents() }

// samplerOptions are the signal options the sampler runs with. A replica
// policy never reads the split gate, so its sampler skips the split probe
// (the options stay in the metadata, and so in the sampler key, unchanged).
func samplerOptions(md Metadata) signal.Options {
	opts := md.Signal
	if md.Policy.Replicas() {
		opts.SplitAwareScaleIn = false
	}
	return opts
}
