// Package decide runs a target's replica policy inside its sampler. A
// Runner is the signal.Decider of one target: it folds each sample with the
// pressure computer or with one of pkg/policy's policies, and around every
// decision it does the bookkeeping pkg/policy leaves to its caller: launch
// and removal tracking, the audit trail, the decision log, the per-action
// counts and cost. The Engine holds what targets share: the audit log, the
// launch trackers and the pools.
//
// The published snapshot stays the single source of truth: a Runner puts
// the decision (desired count, action, reason, policy, cost) on the signal,
// and every surface reads it from there. Only the audit trail and the
// decision counts are kept beside it, because they are histories.
package decide

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// Spec is a target's policy configuration, validated: the `policy` key and
// the keys that tune it.
type Spec struct {
	// Policy is signal.PolicyPressure or one of policy.Names().
	Policy string
	// Queue tunes the queue policy; ignored by the others.
	Queue policy.QueueOptions
	// Elasticity tunes the elasticity policies; ignored by the others.
	Elasticity policy.ElasticityOptions
	// LaunchTTL is how long a scale-up or scale-down counts as in flight
	// (not pressure, whose demand is measured, never asked for).
	LaunchTTL time.Duration
	// CostPerReplicaSecond prices the target's replica-seconds.
	CostPerReplicaSecond float64
	// Pool names the pool an elasticity target is decided in; "" for none.
	Pool string
}

// Replicas reports whether the policy's signal is a replica count, which
// KEDA reads with target 1, rather than pressure in replica units.
func (s Spec) Replicas() bool { return s.Policy != signal.PolicyPressure }

// Elastic reports whether the policy is one of the elasticity policies.
func (s Spec) Elastic() bool {
	return s.Policy != signal.PolicyPressure && s.Policy != policy.PolicyQueue
}

// Key is the spec in a canonical text form: equal specs give equal keys, so
// a target's sampler key can include it.
func (s Spec) Key() string {
	switch {
	case s.Policy == signal.PolicyPressure:
		return fmt.Sprintf("pressure cost=%g", s.CostPerReplicaSecond)
	case s.Policy == policy.PolicyQueue:
		return fmt.Sprintf("queue %+v launchTTL=%s cost=%g", s.Queue, s.LaunchTTL, s.CostPerReplicaSecond)
	default:
		return fmt.Sprintf("%s cost=%g %s pool=%q", s.Policy, s.CostPerReplicaSecond, s.elasticKey(), s.Pool)
	}
}

// elasticKey is the elasticity options and the launch TTL, as the metadata
// keys name them: what a pool's members must agree on besides the sample
// interval (cost is per member, so it may differ).
func (s Spec) elasticKey() string {
	o := s.Elasticity
	return fmt.Sprintf("policy=%s minReplicas=%d maxReplicas=%s threshold=%g thresholdLow=%g ticks=%d slotsPerReplica=%d launchTTL=%s",
		s.Policy, o.Min, policy.BoundText(o.Max), o.High, o.Low, o.Ticks, o.SlotsPerReplica, s.LaunchTTL)
}

// Config wires an Engine.
type Config struct {
	// AuditSize is how many events the audit trail keeps per target; <= 0
	// means policy.DefaultAuditSize.
	AuditSize int
}

// Engine is what a registry's runners share. Safe for concurrent use.
type Engine struct {
	audit *auditLog

	mu       sync.Mutex
	trackers map[time.Duration]*policy.LaunchTracker // by TTL: state is per target inside
	pools    map[string]*pool
	// owners is the live runner of each target key. A reaped target's
	// runner closes after its sampler stops, which can be after a new
	// runner took the same key; its release must not undo the new one.
	owners map[string]*Runner
}

// NewEngine returns an engine with an empty audit trail.
func NewEngine(cfg Config) *Engine {
	return &Engine{audit: newAuditLog(cfg.AuditSize), trackers: map[time.Duration]*policy.LaunchTracker{}, pools: map[string]*pool{}, owners: map[string]*Runner{}}
}

// Events returns a target's kept decisions, oldest first (never nil).
func (e *Engine) Events(target string) []policy.Event {
	return orEmpty(e.audit.Events(target))
}

// AllEvents returns every target's kept decisions, newest last (never nil).
func (e *Engine) AllEvents() []policy.Event { return orEmpty(e.audit.All()) }

func orEmpty(ev []policy.Event) []policy.Event {
	if ev == nil {
		return []policy.Event{}
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

// Runner returns the Decider of target key, which samples every interval.
// A pooled spec joins its pool, or returns a *PoolConflictError when the
// pool is decided with other options. Close the runner once its sampler
// has stopped.
func (e *Engine) Runner(key string, spec Spec, opts signal.Options, interval time.Duration, now time.Time, logger *slog.Logger) (*Runner, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Runner{key: key, spec: spec, engine: e, log: logger}
	var err error
	switch {
	case spec.Policy == signal.PolicyPressure:
		r.computer = signal.NewComputer(opts)
		r.prev = r.computer.WarmingUp().RecommendedReplicas
		e.mu.Lock()
		e.owners[key] = r
		e.mu.Unlock()
		return r, nil
	case spec.Policy == policy.PolicyQueue:
		r.queue, err = policy.NewQueuePolicy(spec.Queue)
	case slices.Contains(policy.Names(), spec.Policy):
		r.elastic, err = policy.NewElasticityPolicy(spec.Elasticity)
	default:
		err = fmt.Errorf("unknown policy %q", spec.Policy)
	}
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.tracker, err = e.tracker(spec.LaunchTTL); err != nil {
		return nil, err
	}
	if spec.Pool != "" && spec.Elastic() {
		p, ok := e.pools[spec.Pool]
		want := spec.elasticKey() + " sampleInterval=" + interval.String()
		if !ok {
			p = newPool(spec.Pool, want, r.elastic, r.tracker, interval)
			e.pools[spec.Pool] = p
		} else if p.key != want {
			return nil, &PoolConflictError{Pool: spec.Pool, Want: p.key, Have: want}
		}
		p.join(r, now)
		r.pool = p
	}
	e.owners[key] = r
	return r, nil
}

// tracker returns the launch tracker for ttl; e.mu is held.
func (e *Engine) tracker(ttl time.Duration) (*policy.LaunchTracker, error) {
	if t, ok := e.trackers[ttl]; ok {
		return t, nil
	}
	t, err := policy.NewLaunchTracker(policy.LaunchOptions{TTL: ttl})
	if err != nil {
		return nil, err
	}
	e.trackers[ttl] = t
	return t, nil
}

// release forgets a closed runner: it leaves its pool (the pool goes when
// its last member does), and its launches and events are dropped. A runner
// whose key a newer runner has taken releases only what is its own.
func (e *Engine) release(r *Runner) {
	e.mu.Lock()
	if r.pool != nil && r.pool.leave(r) == 0 {
		delete(e.pools, r.pool.name)
	}
	superseded := e.owners[r.key] != r
	if !superseded {
		delete(e.owners, r.key)
	}
	e.mu.Unlock()
	if superseded {
		return
	}
	if r.tracker != nil {
		r.tracker.Forget(r.key)
	}
	e.audit.Forget(r.key)
}
