package policy

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// DefaultAuditSize is how many events the audit trail keeps per target.
const DefaultAuditSize = 100

// AuditOptions tune the AuditLog.
type AuditOptions struct {
	// PerTarget is how many of a target's latest events are kept.
	PerTarget int
}

// DefaultAuditOptions returns the documented default.
func DefaultAuditOptions() AuditOptions { return AuditOptions{PerTarget: DefaultAuditSize} }

// Validate returns an *OptionError naming the first invalid field.
func (o AuditOptions) Validate() error { return checkInt("PerTarget", o.PerTarget, 1) }

// Event is one decision in the audit trail (000's ElasticityEvent).
type Event struct {
	Time   time.Time          `json:"time"`
	Target string             `json:"target"`
	Policy string             `json:"policy"`
	Action Action             `json:"action"`
	Reason string             `json:"reason"`
	Before int                `json:"before"`
	After  int                `json:"after"`
	Inputs map[string]float64 `json:"inputs,omitempty"`
}

// Event returns the audit event of d for target.
func (d Decision) Event(target string) Event {
	return Event{
		Time: d.At, Target: target, Policy: d.Policy, Action: d.Action,
		Reason: d.Reason, Before: d.Before, After: d.Desired, Inputs: d.Inputs,
	}
}

// AuditLog keeps the last events of every target in a bounded ring per
// target. Safe for concurrent use: the engine records, HTTP handlers read.
// Events are returned by value; their Inputs maps are shared and must be
// treated as read-only.
type AuditLog struct {
	size int

	mu      sync.Mutex
	targets map[string]*ring
}

// ring holds up to size events; once full, start is the oldest.
type ring struct {
	events []Event
	start  int
}

// NewAuditLog validates opts and returns an empty log.
func NewAuditLog(opts AuditOptions) (*AuditLog, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &AuditLog{size: opts.PerTarget, targets: map[string]*ring{}}, nil
}

// Record appends e to its target's ring, dropping the oldest when full.
func (a *AuditLog) Record(e Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.targets[e.Target]
	if !ok {
		r = &ring{events: make([]Event, 0, a.size)}
		a.targets[e.Target] = r
	}
	if len(r.events) < a.size {
		r.events = append(r.events, e)
		return
	}
	r.events[r.start] = e
	r.start = (r.start + 1) % a.size
}

// Events returns a target's kept events, oldest first (nil when none).
func (a *AuditLog) Events(target string) []Event {
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
func (a *AuditLog) All() []Event {
	a.mu.Lock()
	var out []Event
	for _, r := range a.targets {
		out = r.appendTo(out)
	}
	a.mu.Unlock()
	slices.SortStableFunc(out, func(x, y Event) int {
		if c := x.Time.Compare(y.Time); c != 0 {
			return c
		}
		return cmp.Compare(x.Target, y.Target)
	})
	return out
}

// Forget drops a target that is no longer scaled.
func (a *AuditLog) Forget(target string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.targets, target)
}

func (r *ring) appendTo(dst []Event) []Event {
	dst = append(dst, r.events[r.start:]...)
	return append(dst, r.events[:r.start]...)
}
