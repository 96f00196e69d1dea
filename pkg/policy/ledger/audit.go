package ledger

import (
	"maps"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
)

// DefaultAuditSize is how many events an audit trail keeps per target (the
// trail itself is the caller's: pkg/decide keeps one per engine).
const DefaultAuditSize = 100

// Event is one decision in the audit trail (docs/semantics.md, "Audit
// rows").
type Event struct {
	Time   time.Time          `json:"time"`
	Target string             `json:"target"`
	Policy string             `json:"policy"`
	Action policy.Action      `json:"action"`
	Reason string             `json:"reason"`
	Before int                `json:"before"`
	After  int                `json:"after"`
	Inputs map[string]float64 `json:"inputs,omitempty"`
}

// EventOf returns the audit event of d for target. The policies put only
// finite numbers in Inputs; any other input is left out all the same, since
// JSON has no NaN or Inf and one would fail the whole /events answer.
func EventOf(d policy.Decision, target string) Event {
	in := d.Inputs
	for _, v := range in {
		if !finite(v) {
			in = maps.Clone(d.Inputs)
			maps.DeleteFunc(in, func(_ string, v float64) bool { return !finite(v) })
			break
		}
	}
	return Event{
		Time: d.At, Target: target, Policy: d.Policy, Action: d.Action,
		Reason: d.Reason, Before: d.Before, After: d.Desired, Inputs: in,
	}
}
