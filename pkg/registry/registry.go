// Package registry is the lifecycle of targets: it starts one sampler per
// distinct trigger on first use, shares it between ScaledObjects, keeps the
// parsed triggers so a repeated call is a lookup, and stops a sampler when
// nobody has read it for a while.
package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/barometer-scaler/barometer/internal/mapsize"
	"github.com/barometer-scaler/barometer/pkg/decide"
	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// Ref names a ScaledObject.
type Ref struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// Target is one running sampler and the spec it samples with. Targets are
// shared: every ScaledObject whose trigger has the same identity reads the
// same Target, and reaches its own trigger's read-side keys through its
// Served record, never through the Target.
type Target struct {
	// Key is the spec's identity.
	Key      string
	spec     *trigger.Spec
	sampler  *sampling.Sampler
	cancel   context.CancelFunc
	done     chan struct{}
	lastUsed atomic.Int64 // unix nanoseconds
	pinned   bool         // the default target is never reaped
	streams  atomic.Int32 // open streams; a target with one is never reaped
	reaped   atomic.Bool  // stopped: cached bindings to it are dead
	source   pressure.Source
	decider  decide.Decider
	// namespace started the target (counted against its limit); bound
	// are the bindings to it. Both are guarded by Registry.mu.
	namespace string
	bound     map[*binding]struct{}
	// readers are the distinct Readers of the triggers it serves (its
	// bindings', and the default's when it is the default target), which
	// its decider reads at each decision; written under Registry.mu.
	readers atomic.Pointer[[]trigger.Reader]
}

// setReaders recomputes t's readers from its bindings; r.mu is held.
func (r *Registry) setReaders(t *Target) {
	var rs []trigger.Reader
	add := func(tr *trigger.Trigger) {
		if tr != nil && !slices.Contains(rs, tr.Reader()) {
			rs = append(rs, tr.Reader())
		}
	}
	if r.def.Target == t {
		add(r.def.Trigger)
	}
	for b := range t.bound {
		add(b.trigger)
	}
	slices.SortFunc(rs, func(a, b trigger.Reader) int {
		return cmp.Or(cmp.Compare(a.TargetPressure, b.TargetPressure), cmp.Compare(a.MinReplicas, b.MinReplicas))
	})
	t.readers.Store(&rs)
}

// Readers are the triggers the target serves, as its decisions read them.
func (t *Target) Readers() []trigger.Reader {
	if rs := t.readers.Load(); rs != nil {
		return *rs
	}
	return nil
}

// Spec is what the target samples with.
func (t *Target) Spec() *trigger.Spec { return t.spec }

// SourceKey is the spec's source key.
func (t *Target) SourceKey() string { return t.spec.SourceKey() }

// Policy is the name of the target's policy (signal.PolicyPressure for the
// pressure signal).
func (t *Target) Policy() string { return t.decider.Policy() }

// Decisions counts the target's decisions by action (scale_up, scale_down,
// no-op), every action present.
func (t *Target) Decisions() map[string]uint64 { return t.decider.Decisions() }

// Source returns the target's pressure source, for surfaces that report
// source-specific facts (such as per-replica scrape errors).
func (t *Target) Source() pressure.Source { return t.source }

// History appends the target's kept samples to dst, oldest first (none
// unless Config.History is set).
func (t *Target) History(dst []sampling.HistoryPoint) []sampling.HistoryPoint {
	return t.sampler.History(dst)
}

// Load returns the latest snapshot (one atomic load).
func (t *Target) Load() *sampling.Snapshot { return t.sampler.Load() }

// WaitFirst waits up to max for the first sample and returns the snapshot
// then in force, warming up or not.
func (t *Target) WaitFirst(ctx context.Context, max time.Duration) *sampling.Snapshot {
	if snap := t.Load(); sampled(snap) {
		return snap // the common case: no timer, no allocation
	}
	timer := time.NewTimer(max)
	defer timer.Stop()
	for {
		snap := t.Load()
		if sampled(snap) {
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

// sampled reports whether a snapshot is past warming up: a signal, or a
// first sample that failed.
func sampled(snap *sampling.Snapshot) bool {
	return !snap.Signal.WarmingUp() || snap.Samples > 0 && snap.LastErr != nil
}

// Config wires a Registry.
type Config struct {
	// Schema parses trigger metadata.
	Schema *trigger.Schema
	// DefaultInterval is the sample interval when metadata sets none.
	DefaultInterval time.Duration
	// IdleTimeout stops a sampler nobody has read for this long.
	IdleTimeout time.Duration
	// AuditSize is how many decisions the audit trail keeps per target;
	// <= 0 means ledger.DefaultAuditSize.
	AuditSize int
	// MaxBindings bounds the parsed triggers kept for repeated calls; <= 0
	// means DefaultMaxBindings. Past it a call is parsed anew each time.
	MaxBindings int
	// Limits bound targets and the ScaledObjects they serve.
	Limits Limits
	// AlignSamples samples every target at the multiples of its interval
	// on the clock (sampling.SamplerConfig.Align), so that scaler replicas
	// sample at the same instants.
	AlignSamples bool
	// After, when set, builds what consumes a target's samples besides
	// its decider (victim hints); a nil result: nothing.
	After func(spec *trigger.Spec) func(ctx context.Context, obs pressure.Observation, in signal.Input)
	// History is how many published samples each target keeps for the
	// status page (sampling.DefaultHistory); 0 keeps none.
	History int
	// Clock is the one source of time of the registry and of every surface
	// that reads it (Registry.Now).
	Clock  sampling.Clock
	Logger *slog.Logger
}

// Registry owns the samplers: it starts one on first use, shares it between
// identical configurations and stops it once idle. Safe for concurrent use.
type Registry struct {
	cfg Config
	// base is the samplers' parent: the registry's context without its
	// cancellation. A context keeps its cancelable children in a map that
	// never shrinks, so samplers started under ctx itself would leave a
	// flood's worth of map in it after they are reaped; instead the end of
	// ctx stops every sampler through cancelAll.
	base   context.Context
	engine *decide.Engine

	mu       sync.Mutex
	stopping bool // ctx has ended: every sampler is cancelled, new ones at once
	targets  map[string]*Target
	refs     map[Ref][]*binding // ScaledObject -> its triggers
	def      Served             // the default target and its trigger

	cache   bindings
	started map[string]int // namespace -> targets it started
	refused refusals
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
		cfg.Clock = sampling.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBindings <= 0 {
		cfg.MaxBindings = DefaultMaxBindings
	}
	cfg.Limits = cfg.Limits.withDefaults()
	r := &Registry{cfg: cfg, base: context.WithoutCancel(ctx), engine: decide.NewEngine(decide.Config{AuditSize: cfg.AuditSize}),
		targets: map[string]*Target{}, refs: map[Ref][]*binding{}, cache: newBindings(cfg.MaxBindings), started: map[string]int{}}
	context.AfterFunc(ctx, r.cancelAll)
	return r
}

// cancelAll cancels every sampler, and every sampler started from now on.
func (r *Registry) cancelAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping = true
	for _, t := range r.targets {
		t.cancel()
	}
}

// Now is the registry's clock: every surface reads time here, so staleness,
// sampling and reaping can never disagree about it.
func (r *Registry) Now() time.Time { return r.cfg.Clock.Now() }

// Parse reads a ScaledObject's metadata with this registry's schema.
func (r *Registry) Parse(raw map[string]string) (*trigger.Trigger, error) {
	return r.cfg.Schema.Parse(raw, r.cfg.DefaultInterval)
}

// Resolve returns the target serving ref's trigger metadata raw, and the
// parsed trigger. A ScaledObject that sends the metadata it sent before
// costs a lookup and an atomic store: the metadata is parsed once, when
// first seen. Errors are those of Parse and Acquire.
func (r *Registry) Resolve(ref Ref, raw map[string]string) (*Target, *trigger.Trigger, error) {
	sum := r.cache.sum(ref, raw)
	if b, tr := r.cache.find(sum, ref, raw); b != nil {
		now := r.cfg.Clock.Now().UnixNano()
		b.seen.Store(now)
		b.target.lastUsed.Store(now)
		return b.target, tr, nil
	}
	tr, err := r.cfg.Schema.ParseIn(ref.Namespace, raw, r.cfg.DefaultInterval)
	if err != nil {
		return nil, nil, err
	}
	t, err := r.acquire(ref, tr, &cacheEntry{sum: sum, raw: raw})
	return t, tr, err
}

// cacheEntry is what Resolve keeps of a call for the next: the metadata
// and its sum. A nil or empty map is metadata like any other (KEDA sends
// none for a trigger without any), and is cached like any other.
type cacheEntry struct {
	sum uint64
	raw map[string]string
}

// Acquire returns the target for tr, starting its sampler if needed, and
// records that ref uses it. A target whose pool is decided with other
// options is refused with a *keyschema.MetadataError on the pool key.
func (r *Registry) Acquire(ref Ref, tr *trigger.Trigger) (*Target, error) {
	return r.acquire(ref, tr, nil)
}

// acquire is Acquire; with entry set, it also keeps the binding of ref and
// entry's metadata to the target for Resolve.
func (r *Registry) acquire(ref Ref, tr *trigger.Trigger, entry *cacheEntry) (*Target, error) {
	key := tr.Identity()
	now := r.cfg.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.targets[key]
	if !ok {
		if err := r.admit(ref); err != nil {
			return nil, err
		}
		var err error
		if t, err = r.start(key, tr); err != nil {
			return nil, err
		}
		t.namespace = ref.Namespace
		r.started[ref.Namespace]++
	}
	t.lastUsed.Store(now.UnixNano())
	if ref == (Ref{}) {
		return t, nil
	}
	b, err := r.bind(ref, t)
	if err != nil {
		return nil, err
	}
	b.seen.Store(now.UnixNano())
	changed := b.trigger == nil || b.trigger.Reader() != tr.Reader()
	b.trigger = tr
	if changed {
		r.setReaders(t)
	}
	if entry != nil {
		b.raw = maps.Clone(entry.raw) // the caller's map may change
		r.cache.add(entry.sum, b, tr, b.raw)
	}
	return t, nil
}

// admit refuses a new target past the limits; r.mu is held.
func (r *Registry) admit(ref Ref) error {
	l := r.cfg.Limits
	if len(r.targets) >= l.Targets {
		return r.refuse(LimitTargets, l.Targets, "")
	}
	if ref != (Ref{}) && r.started[ref.Namespace] >= l.TargetsPerNamespace {
		return r.refuse(LimitTargetsPerNamespace, l.TargetsPerNamespace, ref.Namespace)
	}
	return nil
}

// bind returns ref's binding to t, made if new and within t's limit; r.mu
// is held.
func (r *Registry) bind(ref Ref, t *Target) (*binding, error) {
	for _, b := range r.refs[ref] {
		if b.target == t {
			return b, nil
		}
	}
	if len(t.bound) >= r.cfg.Limits.RefsPerTarget {
		return nil, r.refuse(LimitRefsPerTarget, r.cfg.Limits.RefsPerTarget, t.Key)
	}
	b := &binding{ref: ref, target: t}
	r.refs[ref] = append(r.refs[ref], b)
	t.bound[b] = struct{}{}
	return b, nil
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
func (r *Registry) SetDefault(tr *trigger.Trigger) (*Target, error) {
	t, err := r.Acquire(Ref{}, tr)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	t.pinned, r.def = true, Served{Target: t, Trigger: tr}
	r.setReaders(t)
	r.mu.Unlock()
	return t, nil
}

// Default returns the default target and its trigger; false when none is
// set.
func (r *Registry) Default() (Served, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.def, r.def.Target != nil
}

// ErrUnknownRef is returned by Lookup for a ScaledObject never seen (or
// whose target was reaped).
var ErrUnknownRef = errors.New("no target serves this ScaledObject")

// refActive is how recently KEDA must have asked for a ScaledObject's
// target for Lookup to count it as in use: a few of KEDA's polls.
const refActive = time.Minute

// Served is the target serving a ScaledObject, and the ScaledObject's own
// trigger and metadata: the one way a surface reaches a trigger, since
// ScaledObjects sharing a target may differ in their read-side keys (their
// targetPressure, say).
type Served struct {
	// Ref is the ScaledObject; zero for the default target.
	Ref     Ref
	Target  *Target
	Trigger *trigger.Trigger
	// Metadata is the metadata Trigger was parsed from, nil when the
	// ScaledObject was bound without it (Acquire); read-only.
	Metadata map[string]string
}

// Serving returns the target serving ref, with the trigger and metadata
// last parsed for ref. A ScaledObject can have several targets: several
// Barometer triggers, or a trigger whose settings changed (the old target
// runs until reaped). Serving returns the first by key among those KEDA
// asked for within refActive, so two live triggers always give the same
// answer; when none is that recent, the one asked for last. /targets lists
// them all. A ScaledObject that goes back to metadata it sent before is
// found in the cache and keeps the newer trigger here, which GetMetrics
// never pays to update.
func (r *Registry) Serving(ref Ref) (Served, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Clock.Now()
	var best *binding
	var bestAt time.Time
	bestActive := false
	for _, b := range r.refs[ref] {
		k, at := b.target.Key, time.Unix(0, b.seen.Load())
		if r.targets[k] != b.target {
			continue
		}
		active := now.Sub(at) <= refActive
		switch {
		case best == nil,
			active && !bestActive,
			active && bestActive && k < best.target.Key,
			!active && !bestActive && at.After(bestAt):
			best, bestAt, bestActive = b, at, active
		}
	}
	if best == nil {
		return Served{}, fmt.Errorf("%w: %s", ErrUnknownRef, ref)
	}
	return Served{Ref: ref, Target: best.target, Trigger: best.trigger, Metadata: best.raw}, nil
}

// Settings is every key of the trigger metadata raw of a ScaledObject in
// namespace, with the value in force and where it came from
// (trigger.Schema.Settings): parsed anew, at the caller's cost.
func (r *Registry) Settings(namespace string, raw map[string]string) ([]trigger.Setting, error) {
	return r.cfg.Schema.Settings(namespace, raw, r.cfg.DefaultInterval)
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

// Named returns every running target with what names it for people and
// metrics: the default target its own trigger (Ref zero), any other the
// first ScaledObject it serves by namespace/name (Trigger nil while it
// serves none); sorted by key.
func (r *Registry) Named() []Served {
	r.mu.Lock()
	out := make([]Served, 0, len(r.targets))
	for _, t := range r.targets {
		s := Served{Target: t}
		if r.def.Target == t {
			s = r.def
		} else {
			for b := range t.bound {
				if s.Trigger == nil || b.ref.String() < s.Ref.String() {
					s.Ref, s.Trigger = b.ref, b.trigger
				}
			}
		}
		out = append(out, s)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Served) int { return strings.Compare(a.Target.Key, b.Target.Key) })
	return out
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

// List returns every running target, sorted by key. It copies what it
// needs under the lock and builds the listing outside it, so a listing of
// many targets holds up nobody.
func (r *Registry) List() []Info {
	r.mu.Lock()
	targets := make([]*Target, 0, len(r.targets))
	for _, t := range r.targets {
		targets = append(targets, t)
	}
	var bound []*binding
	for _, bs := range r.refs {
		bound = append(bound, bs...)
	}
	def := r.def
	r.mu.Unlock()

	byTarget := make(map[*Target][]Ref, len(targets))
	for _, b := range bound {
		byTarget[b.target] = append(byTarget[b.target], b.ref)
	}
	out := make([]Info, 0, len(targets))
	for _, t := range targets {
		refs := append([]Ref{}, byTarget[t]...)
		slices.SortFunc(refs, func(a, b Ref) int { return strings.Compare(a.String(), b.String()) })
		out = append(out, Info{
			Key: t.Key, Source: t.SourceKey(), Interval: t.spec.Interval.String(), Policy: t.Policy(),
			Default: t == def.Target, LastUsed: time.Unix(0, t.lastUsed.Load()).UTC(), ScaledObjs: refs,
		})
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// ReapIdle stops samplers unread for longer than the idle timeout, and
// forgets every ScaledObject that has not asked for its target for that
// long: the default target's too, which is never stopped. Run calls it
// periodically.
func (r *Registry) ReapIdle() int {
	cutoff := r.cfg.Clock.Now().Add(-r.cfg.IdleTimeout).UnixNano()
	r.mu.Lock()
	targets, refs, namespaces := len(r.targets), len(r.refs), len(r.started)
	var stopped []*Target
	for key, t := range r.targets {
		if t.pinned || t.streams.Load() > 0 || t.lastUsed.Load() >= cutoff {
			continue
		}
		delete(r.targets, key)
		t.reaped.Store(true)
		if r.started[t.namespace]--; r.started[t.namespace] <= 0 {
			delete(r.started, t.namespace)
		}
		stopped = append(stopped, t)
	}
	var forgotten []*binding
	for ref, bs := range r.refs {
		bs = slices.DeleteFunc(bs, func(b *binding) bool {
			gone := b.target.reaped.Load() || b.seen.Load() < cutoff && b.target.streams.Load() == 0
			if gone {
				delete(b.target.bound, b)
				forgotten = append(forgotten, b)
			}
			return gone
		})
		if len(bs) == 0 {
			delete(r.refs, ref)
		} else {
			r.refs[ref] = bs
		}
	}
	for _, b := range forgotten {
		if !b.target.reaped.Load() {
			r.setReaders(b.target)
		}
	}
	r.targets = mapsize.Shrunk(r.targets, &targets)
	r.refs = mapsize.Shrunk(r.refs, &refs)
	r.started = mapsize.Shrunk(r.started, &namespaces)
	r.mu.Unlock()
	r.cache.forget(forgotten)
	for _, t := range stopped {
		t.cancel()
		<-t.done
		r.cfg.Logger.Info("stopped idle sampler", "target", t.spec.ShortID())
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

// start builds the source and runs its sampler, which reads first's Reader
// until the target's bindings say otherwise; r.mu is held.
func (r *Registry) start(key string, first *trigger.Trigger) (*Target, error) {
	tr := first.Spec
	logger := r.cfg.Logger.With("target", tr.ShortID())
	t := &Target{Key: key, spec: tr, bound: map[*binding]struct{}{}}
	t.readers.Store(&[]trigger.Reader{first.Reader()})
	decider, err := r.engine.New(key, tr, t.Readers, r.cfg.Clock.Now(), logger)
	var conflict *decide.PoolConflictError
	if errors.As(err, &conflict) {
		return nil, &keyschema.MetadataError{Key: trigger.KeyPool, Value: conflict.Pool, Allowed: conflict.Error()}
	}
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", tr.Policy.Name, err)
	}
	src, err := tr.Source.New(logger)
	if err != nil {
		decider.Close()
		return nil, fmt.Errorf("start source %s: %w", tr.SourceKey(), err)
	}
	var after func(context.Context, pressure.Observation, signal.Input)
	if r.cfg.After != nil {
		after = r.cfg.After(tr)
	}
	sampler := sampling.NewSampler(sampling.SamplerConfig{
		Source:   src,
		Compute:  pressure.ComputeCollector{ActivationWorkingSetTarget: tr.ActivationWorkingSetTarget},
		Storage:  pressure.NewStorageCollector(pressure.DefaultStorageOptions()),
		Options:  tr.SamplerOptions(),
		Decider:  decider,
		Interval: tr.Interval,
		Align:    r.cfg.AlignSamples,
		Backfill: tr.Signal.WarmSamples(tr.Interval),
		After:    after,
		History:  r.cfg.History,
		Clock:    r.cfg.Clock,
		Logger:   logger,
	})
	ctx, cancel := context.WithCancel(r.base)
	if r.stopping {
		cancel()
	}
	t.sampler, t.cancel, t.done, t.source, t.decider = sampler, cancel, make(chan struct{}), src, decider
	go func() {
		defer close(t.done)
		sampler.Run(ctx)
		// Only now, with no Decide running: leave the pool, drop the
		// launches and the events.
		decider.Close()
		// A source may hold connections (kept-alive scrapes); release them
		// as soon as nobody samples it.
		if c, ok := src.(io.Closer); ok {
			if err := c.Close(); err != nil {
				logger.Warn("closing source", "err", err)
			}
		}
	}()
	r.targets[key] = t
	// The one line that ties the short id to the whole identity (the
	// metrics' target label).
	logger.Info("started sampler", "interval", tr.Interval, "policy", tr.Policy.Name, "identity", key)
	return t, nil
}

// Touch marks the target used now, so the reaper keeps it.
func (r *Registry) Touch(t *Target) { t.lastUsed.Store(r.cfg.Clock.Now().UnixNano()) }

// Events returns the decisions the audit trail keeps for what s serves,
// oldest first, each rendered at s's trigger (ledger.Event.At): the replica
// counts its ScaledObject's HPA asks for.
func (r *Registry) Events(s Served) []ledger.Event {
	return rendered(nil, r.engine.Events(s.Target.Key), s)
}

// AllEvents returns every ScaledObject's kept decisions (and the default
// target's), each rendered at its own trigger, newest last.
func (r *Registry) AllEvents() []ledger.Event {
	r.mu.Lock()
	served := make([]Served, 0, len(r.refs)+1)
	if r.def.Target != nil {
		served = append(served, r.def)
	}
	for ref, bs := range r.refs {
		for _, b := range bs {
			if !b.target.reaped.Load() {
				served = append(served, Served{Ref: ref, Target: b.target, Trigger: b.trigger})
			}
		}
	}
	r.mu.Unlock()
	out := []ledger.Event{}
	for _, s := range served {
		out = rendered(out, r.engine.Events(s.Target.Key), s)
	}
	slices.SortStableFunc(out, func(x, y ledger.Event) int {
		return cmp.Or(x.Time.Compare(y.Time), cmp.Compare(x.Target, y.Target), cmp.Compare(x.ScaledObject, y.ScaledObject))
	})
	return out
}

// rendered appends events rendered for s to dst.
func rendered(dst, events []ledger.Event, s Served) []ledger.Event {
	if dst == nil {
		dst = make([]ledger.Event, 0, len(events))
	}
	reader := s.Trigger.Reader()
	for _, e := range events {
		e = e.At(reader.Replicas)
		if s.Ref != (Ref{}) {
			e.ScaledObject = s.Ref.String()
		}
		dst = append(dst, e)
	}
	return dst
}
