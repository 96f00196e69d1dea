package policy

import (
	"sync"
	"time"
)

// DefaultLaunchTTL is how long a launch counts as in flight (000): long
// enough for a replica to start and show up, short enough that a launch that
// failed does not hold a slot for good.
const DefaultLaunchTTL = 15 * time.Second

// LaunchOptions tune the LaunchTracker.
type LaunchOptions struct {
	// TTL is how long a launch token lives unless its replica appears.
	TTL time.Duration
}

// DefaultLaunchOptions returns the documented default.
func DefaultLaunchOptions() LaunchOptions { return LaunchOptions{TTL: DefaultLaunchTTL} }

// Validate returns an *OptionError naming the first invalid field.
func (o LaunchOptions) Validate() error { return checkDuration("TTL", o.TTL, true) }

// LaunchTracker remembers, per target, the replicas a decision asked for
// that are not yet visible, so that the next decisions count them as in
// flight and a slow start is never asked for twice. A token resolves when
// the target's visible replicas rise (one token per new replica, oldest
// first) or expires after the TTL. Time is passed in. Safe for concurrent
// use; the engine calls Observe before a decision and Record after it.
type LaunchTracker struct {
	ttl time.Duration

	mu      sync.Mutex
	targets map[string]*launches
}

// launches is one target's tokens, oldest first, and its last visible count.
type launches struct {
	tokens  []time.Time // launch times
	visible int
	seen    bool
}

// NewLaunchTracker validates opts and returns an empty tracker.
func NewLaunchTracker(opts LaunchOptions) (*LaunchTracker, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &LaunchTracker{ttl: opts.TTL, targets: map[string]*launches{}}, nil
}

// Observe records the target's visible replica count at now and returns how
// many launches are still in flight: expired tokens are dropped, then every
// replica beyond the last visible count resolves the oldest token. The first
// observation of a target only sets its baseline.
func (t *LaunchTracker) Observe(target string, visible int, now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.get(target)
	l.expire(now, t.ttl)
	if l.seen && visible > l.visible {
		n := min(visible-l.visible, len(l.tokens))
		l.tokens = l.tokens[n:]
	}
	l.visible, l.seen = visible, true
	return len(l.tokens)
}

// Record applies target's decision d. A scale-up adds one token per replica
// asked for, stamped d.At. A scale-down first cancels the newest tokens: a
// ReplicaSet removes a replica that is not ready before one that is, so the
// replica taken back is one still starting. Otherwise the next decision
// would count it as in flight and ask for it again.
func (t *LaunchTracker) Record(target string, d Decision) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.get(target)
	switch d.Action {
	case ScaleUp:
		for range d.Desired - d.Before {
			l.tokens = append(l.tokens, d.At)
		}
	case ScaleDown:
		n := min(d.Before-d.Desired, len(l.tokens))
		l.tokens = l.tokens[:len(l.tokens)-n]
	}
}

// Forget drops a target that is no longer scaled.
func (t *LaunchTracker) Forget(target string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.targets, target)
}

func (t *LaunchTracker) get(target string) *launches {
	l, ok := t.targets[target]
	if !ok {
		l = &launches{}
		t.targets[target] = l
	}
	return l
}

// expire drops tokens launched ttl or more before now. Tokens are in launch
// order, so the expired ones are a prefix.
func (l *launches) expire(now time.Time, ttl time.Duration) {
	n := 0
	for n < len(l.tokens) && now.Sub(l.tokens[n]) >= ttl {
		n++
	}
	l.tokens = l.tokens[n:]
}
