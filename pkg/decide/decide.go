// Package decide is the policy runtime: a target's Decider runs the
// pressure computer or its replica policy (policy.Kind's Spec, alone or
// pooled), and its sampler (pkg/sampling) calls it once per sample. Around every decision each does the bookkeeping pkg/policy leaves
// to its caller: launch and removal tracking, the audit trail, the decision
// log, the per-action counts and cost. The Engine holds what targets share:
// the audit log, the launch trackers and the pools.
//
// The published snapshot stays the single source of truth: a Decider puts
// the decision (desired count, action, reason, policy, cost) on the signal
// it returns, the sampler publishes that signal, and every surface reads it
// from there. Only the audit trail and the decision counts are kept beside
// it, because they are histories.
package decide

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/internal/mapsize"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// Config wires an Engine.
type Config struct {
	// AuditSize is how many events the audit trail keeps per target; <= 0
	// means ledger.DefaultAuditSize.
	AuditSize int
}

// Engine is what a registry's deciders share. Safe for concurrent use.
type Engine struct {
	audit *auditLog

	mu       sync.Mutex
	trackers map[time.Duration]*ledger.LaunchTracker // by TTL: state is per target inside
	pools    map[string]*pool
	// owners is the live decider of each target key. A reaped target's
	// decider closes after its sampler stops, which can be after a new
	// decider took the same key; its release must not undo the new one.
	owners     map[string]*books
	ownersPeak int // the most owners has held (mapsize.Shrunk)
}

// NewEngine returns an engine with an empty audit trail.
func NewEngine(cfg Config) *Engine {
	return &Engine{audit: newAuditLog(cfg.AuditSize), trackers: map[time.Duration]*ledger.LaunchTracker{}, pools: map[string]*pool{}, owners: map[string]*books{}}
}

// Events returns a target's kept decisions, oldest first (never nil).
func (e *Engine) Events(target string) []ledger.Event {
	return orEmpty(e.audit.Events(target))
}

// AllEvents returns every target's kept decisions, newest last (never nil).
func (e *Engine) AllEvents() []ledger.Event { return orEmpty(e.audit.All()) }

func orEmpty(ev []ledger.Event) []ledger.Event {
	if ev == nil {
		return []ledger.Event{}
	}
	return ev
}

// PoolConflictError is a target whose options disagree with the pool it
// names. The registry reports it against the `pool` key.
type PoolConflictError struct {
	Pool       string
	Want, Have string // the pool's options and the newcomer's
}

func (e *PoolConflictError) Error() string {
	return fmt.Sprintf("pool %q is decided with %s; every member must set the same policy keys and sampleInterval, this one has %s", e.Pool, e.Want, e.Have)
}

// ErrNoQueue fails a sample whose source reported no work queue when the
// policy reads one.
var ErrNoQueue = errors.New("the source reported no work queue (the barometer_queue_* metrics of docs/exposition.md)")

// Decider folds one target's samples into the signals to publish, with what
// the registry and the surfaces read beside the signal. The sampler
// (pkg/sampling) calls WarmingUp and Decide from one goroutine at a time,
// so a Decider may keep its policy state without locking; Policy and
// Decisions may be read concurrently. Close it once its sampler has
// stopped.
type Decider interface {
	// WarmingUp is the signal published before the first sample.
	WarmingUp() signal.ScalingSignal
	// Decide folds the observation taken at now; in holds the collectors'
	// results (and the split probe's, when the options ask for it). An
	// error fails the sample like a source error: the previous signal
	// stands and the error is recorded.
	Decide(now time.Time, obs pressure.Observation, in signal.Input) (signal.ScalingSignal, error)
	// Policy is the name of the decider's policy.
	Policy() string
	// Decisions counts the target's decisions by action (scale_up,
	// scale_down, no-op), every action present.
	Decisions() map[string]uint64
	// Close leaves the decider's pool and forgets its launches and events;
	// later calls do nothing.
	Close()
}

// Warmer is a Decider that can fold a past sample into its state without
// deciding anything: no audit event, no log line, no count. The sampler's
// backfill uses it (sampling.SamplerConfig.Backfill).
type Warmer interface {
	Decider
	Warm(now time.Time, obs pressure.Observation, in signal.Input)
}

// New returns the Decider of target key for spec t, which samples every
// t.Interval. readers are the triggers the target serves, as they are at
// each decision (nil: one, at target 1); a pressure decision is a change
// when it changes the count any of them asks for. A pooled trigger joins
// its pool, or returns a *PoolConflictError when the pool is decided with
// other options.
func (e *Engine) New(key string, t *trigger.Spec, readers func() []trigger.Reader, now time.Time, logger *slog.Logger) (Decider, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	spec := t.Policy
	l := func(tracker *ledger.LaunchTracker) books {
		return books{key: key, spec: spec, engine: e, log: logger, tracker: tracker}
	}
	if !spec.Replicas() { // the pressure signal
		d := &pressureDecider{books: l(nil), computer: signal.NewComputer(t.Signal), readers: readersOr(readers, t.Signal.MinReplicas)}
		d.prev = d.computer.WarmingUp().ScaleValue
		e.own(&d.books)
		return d, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	tracker, err := e.tracker(spec.LaunchTTL)
	if err != nil {
		return nil, err
	}
	d := &replicaDecider{books: l(tracker), kind: spec.Kind, policy: spec.Options.New()}
	if spec.Pool != "" {
		pl, ok := e.pools[spec.Pool]
		want := t.PoolKey()
		if !ok {
			decider, poolable := spec.Options.NewPool()
			if !poolable {
				return nil, fmt.Errorf("policy %s is not decided in pools", spec.Name)
			}
			pl = newPool(spec.Pool, spec.Name, want, decider, tracker, t.Interval)
			e.pools[spec.Pool] = pl
		} else if pl.key != want {
			return nil, &PoolConflictError{Pool: spec.Pool, Want: pl.key, Have: want}
		}
		pl.join(d, now)
		d.pool = pl
	}
	e.owners[key] = &d.books
	return d, nil
}

// readersOr is readers, or one reader at target 1 when there are none.
func readersOr(readers func() []trigger.Reader, minReplicas int) func() []trigger.Reader {
	one := []trigger.Reader{{TargetPressure: 1, MinReplicas: minReplicas}}
	return func() []trigger.Reader {
		if readers != nil {
			if rs := readers(); len(rs) > 0 {
				return rs
			}
		}
		return one
	}
}

func (e *Engine) own(l *books) {
	e.mu.Lock()
	e.owners[l.key] = l
	e.mu.Unlock()
}

// tracker returns the launch tracker for ttl; e.mu is held.
func (e *Engine) tracker(ttl time.Duration) (*ledger.LaunchTracker, error) {
	if t, ok := e.trackers[ttl]; ok {
		return t, nil
	}
	t, err := ledger.NewLaunchTracker(ledger.LaunchOptions{TTL: ttl})
	if err != nil {
		return nil, err
	}
	e.trackers[ttl] = t
	return t, nil
}

// release forgets a closed decider: it leaves its pool (the pool goes when
// its last member does), and its launches and events are dropped. A decider
// whose key a newer one has taken releases only what is its own.
func (e *Engine) release(l *books, member *replicaDecider) {
	e.mu.Lock()
	if member != nil && member.pool != nil && member.pool.leave(member) == 0 {
		delete(e.pools, member.pool.name)
	}
	superseded := e.owners[l.key] != l
	if !superseded {
		e.ownersPeak = max(e.ownersPeak, len(e.owners))
		delete(e.owners, l.key)
		e.owners = mapsize.Shrunk(e.owners, &e.ownersPeak)
	}
	e.mu.Unlock()
	if superseded {
		return
	}
	if l.tracker != nil {
		l.tracker.Forget(l.key)
	}
	e.audit.Forget(l.key)
}
