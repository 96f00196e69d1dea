package decide

import (
	"cmp"
	"slices"
	"sync"

	"github.com/barometer-scaler/barometer/internal/mapsize"
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

// Record appends e to its target's ring, dropping the oldest when full.
func (a *auditLog) Record(e ledger.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.targets[e.Target]
	if !ok {
		r = &ring{}
		a.targets[e.Target] = r
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

func (r *ring) appendTo(dst []ledger.Event) []ledger.Event {
	dst = append(dst, r.events[r.start:]...)
	return append(dst, r.events[:r.start]...)
}
