// Package ledger is the bookkeeping a caller does around pkg/policy's
// decisions: launch and removal tracking (the changes in flight a decision
// starts from), cost accounting and the audit event. pkg/decide keeps one
// ledger per target; the simulator a tracker per run.
package ledger

import (
	"slices"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
)

// DefaultLaunchTTL is how long a launch (or a removal) counts as in flight
// (docs/semantics.md, "Launch tracking"): long enough for a replica to start and show up, short enough that
// a launch that failed does not hold a slot for good.
const DefaultLaunchTTL = 15 * time.Second

// LaunchOptions tune the LaunchTracker.
type LaunchOptions struct {
	// TTL is how long a launch or removal token lives unless the visible
	// count moves to resolve it.
	TTL time.Duration
}

// DefaultLaunchOptions returns the documented default.
func DefaultLaunchOptions() LaunchOptions { return LaunchOptions{TTL: DefaultLaunchTTL} }

// Validate returns an *policy.OptionError naming the first invalid field.
func (o LaunchOptions) Validate() error {
	if o.TTL <= 0 {
		return &policy.OptionError{Field: "TTL", Value: o.TTL.String(), Allowed: "a duration > 0"}
	}
	return nil
}

// LaunchTracker remembers, per target, the changes decisions asked for that
// are not yet visible, so that the next decisions count them as in flight:
// a slow start is never asked for twice, and a replica on its way out is
// not asked back by the next no-op. A launch token resolves when the
// visible replicas rise (one token per new replica, oldest first), a
// removal token when they fall; a token expires TTL after its decision.
// Time is passed in. Safe for concurrent use; the engine calls Observe
// before a decision and Record after it.
type LaunchTracker struct {
	ttl time.Duration

	mu      sync.Mutex
	targets map[string]*launches
}

// launches is one target's tokens, each list oldest first, and its last
// visible count.
type launches struct {
	up      []launch
	down    []time.Time // removal times
	visible int
	seen    bool
}

// launch is a launch token. A scale-down cancels it (at cancelled): it no
// longer counts, but if its replica shows up all the same (it had started
// before the source saw it), it turns into a removal.
type launch struct {
	at, cancelled time.Time
}

// NewLaunchTracker validates opts and returns an empty tracker.
func NewLaunchTracker(opts LaunchOptions) (*LaunchTracker, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &LaunchTracker{ttl: opts.TTL, targets: map[string]*launches{}}, nil
}

// Observe records the target's visible replica count at now and returns the
// net change still in flight: launches less removals, negative while more
// replicas are leaving than starting. Expired tokens are dropped; then each
// replica beyond the last visible count resolves the oldest launch token
// (a cancelled one turns into a removal, see resolve), and each replica
// short of it the oldest removal. The first observation of
// a target only sets its baseline. "Current" is max(visible + the result, 0).
func (t *LaunchTracker) Observe(target string, visible int, now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.get(target)
	l.up = slices.DeleteFunc(l.up, func(u launch) bool { return now.Sub(u.at) >= t.ttl })
	l.down = slices.DeleteFunc(l.down, func(at time.Time) bool { return now.Sub(at) >= t.ttl })
	if l.seen && visible > l.visible {
		l.resolve(visible - l.visible)
	}
	if l.seen && visible < l.visible {
		l.down = l.down[min(l.visible-visible, len(l.down)):]
	}
	l.visible, l.seen = visible, true
	n := -len(l.down)
	for _, u := range l.up {
		if u.cancelled.IsZero() {
			n++
		}
	}
	return n
}

// Record applies target's decision d. A scale-up adds one launch token per
// replica asked for, stamped d.At; it takes no removal back, as a replica
// that is leaving does not return. A scale-down first cancels the newest
// launch tokens, as a ReplicaSet removes a replica that is not ready before
// one that is (else the next decision would ask for it again); each replica
// beyond those adds a removal token stamped d.At.
func (t *LaunchTracker) Record(target string, d policy.Decision) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.get(target)
	switch d.Action {
	case policy.ScaleUp:
		for range d.Desired - d.Before {
			l.up = append(l.up, launch{at: d.At})
		}
	case policy.ScaleDown:
		n := d.Before - d.Desired
		for i := len(l.up) - 1; i >= 0 && n > 0; i-- {
			if l.up[i].cancelled.IsZero() {
				l.up[i].cancelled = d.At
				n--
			}
		}
		for range n {
			l.remove(d.At)
		}
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

// resolve takes n new replicas off the launch tokens, oldest first. A
// cancelled launch that shows up turns into a removal; but the new replica
// may as well be a later live launch's (the cancelled one deleted unseen),
// so the removal lasts as long as the oldest live token left (one removal
// per token): either way launches less removals stays right until both
// expire. Resolving live tokens first would fail the other way: when the
// cancelled replica did show, its fall would find no removal to resolve.
func (l *launches) resolve(n int) {
	n = min(n, len(l.up))
	resolved, left := l.up[:n], l.up[n:]
	next := 0 // left[next:] holds the live tokens not paired yet
	for _, u := range resolved {
		if u.cancelled.IsZero() {
			continue
		}
		at := u.cancelled
		for next < len(left) && !left[next].cancelled.IsZero() {
			next++
		}
		if next < len(left) {
			if left[next].at.After(at) {
				at = left[next].at
			}
			next++
		}
		l.remove(at)
	}
	l.up = left
}

// remove adds a removal token at at, keeping the oldest first.
func (l *launches) remove(at time.Time) {
	i := slices.IndexFunc(l.down, func(x time.Time) bool { return x.After(at) })
	if i < 0 {
		i = len(l.down)
	}
	l.down = slices.Insert(l.down, i, at)
}
