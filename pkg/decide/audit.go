package decide

import (
	"cmp"
	"slices"
	"sync"

	"github.com/barometer-scaler/barometer/internal/mapsize"
	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
)

// auditLog keeps the last events of every target in a bounded ring per
// target. Safe for concurrent use: runners record, HTTP handlers read.
// Events are returned by value; their Inputs maps are shared and must be
// treated as read-only.
type auditLog struct {
	size int

	mu      sync.Mutex
	targets map[string]*ring
	peak    int // the most targets has held (mapsize.Shrunk)
}

// ring holds up to size events; once full, start is the oldest. It grows
// as events arrive, so a target that decides rarely (or a thousand of them
// started at once) holds what it recorded, not size events' worth each.
type ring struct {
	events []ledger.Event
	start  int
}

// newAuditLog returns an empty log that keeps size events per target; a
// size below 1 means ledger.DefaultAuditSize.
func newAuditLog(size int) *auditLog {
	if size < 1 {
		size = ledger.DefaultAuditSize
	}
	return &auditLog{size: size, targets: map[string]*ring{}}
}

// Record appends e to its target's ring, dropping the oldest when full. A
// no-op at the count the last entry left, whose reason reads as that
// entry's but for its numbers, is folded into it (Repeats, LastTime): the
// ring keeps the changes and the changes of reason, so a scale event
// survives hours of steady samples.
func (a *auditLog) Record(e ledger.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.targets[e.Target]
	if !ok {
		r = &ring{}
		a.targets[e.Target] = r
	}
	if last := r.last(); last != nil && e.Action == policy.NoOp && e.Before == last.After && e.After == last.After && sameReason(last.Reason, e.Reason) {
		last.Repeats++
		last.LastTime = e.Time
		return
	}
	if len(r.events) < a.size {
		if len(r.events) == cap(r.events) {
			// Double, from a few events up to size exactly: append's own
			// growth would overshoot size (a ring of 100 would hold 128).
			grown := make([]ledger.Event, len(r.events), min(a.size, max(4, 2*cap(r.events))))
			copy(grown, r.events)
			r.events = grown
		}
		r.events = append(r.events, e)
		return
	}
	r.events[r.start] = e
	r.start = (r.start + 1) % a.size
}

// Events returns a target's kept events, oldest first (nil when none).
func (a *auditLog) Events(target string) []ledger.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.targets[target]
	if !ok {
		return nil
	}
	return r.appendTo(nil)
}

// All returns every target's kept events, oldest first; events of one
// instant are ordered by target.
func (a *auditLog) All() []ledger.Event {
	a.mu.Lock()
	var out []ledger.Event
	for _, r := range a.targets {
		out = r.appendTo(out)
	}
	a.mu.Unlock()
	slices.SortStableFunc(out, func(x, y ledger.Event) int {
		if c := x.Time.Compare(y.Time); c != 0 {
			return c
		}
		return cmp.Compare(x.Target, y.Target)
	})
	return out
}

// Forget drops a target that is no longer scaled.
func (a *auditLog) Forget(target string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.peak = max(a.peak, len(a.targets))
	delete(a.targets, target)
	a.targets = mapsize.Shrunk(a.targets, &a.peak)
}

// last is the newest event, nil when none.
func (r *ring) last() *ledger.Event {
	if len(r.events) == 0 {
		return nil
	}
	return &r.events[(r.start+len(r.events)-1)%len(r.events)]
}

// sameReason reports whether two reasons read alike once their numbers are
// left out ("resource pressure 0.52 across 3 replica(s)" and "... 0.55
// across 3 ..."), without allocating.
func sameReason(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		na, nb := isNumeric(a[i]), isNumeric(b[j])
		switch {
		case na && nb:
			for i < len(a) && isNumeric(a[i]) {
				i++
			}
			for j < len(b) && isNumeric(b[j]) {
				j++
			}
		case a[i] != b[j]:
			return false
		default:
			i, j = i+1, j+1
		}
	}
	return i == len(a) && j == len(b)
}

func isNumeric(c byte) bool { return c >= '0' && c <= '9' || c == '.' }

func (r *ring) appendTo(dst []ledger.Event) []ledger.Event {
	dst = append(dst, r.events[r.start:]...)
	return append(dst, r.events[:r.start]...)
}
