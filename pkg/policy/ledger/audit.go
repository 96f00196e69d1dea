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
// rows"), and the no-ops folded into it.
type Event struct {
	Time         time.Time          `json:"time"`
	Target       string             `json:"target"`
	ScaledObject string             `json:"scaledObject,omitempty"`
	Policy       string             `json:"policy"`
	Action       policy.Action      `json:"action"`
	Reason       string             `json:"reason"`
	Before       int                `json:"before"`
	After        int                `json:"after"`
	Inputs       map[string]float64 `json:"inputs,omitempty"`
	// Repeats counts the no-ops with the same reason that followed it,
	// folded in; LastTime is the last one's time.
	Repeats  int       `json:"repeats,omitempty"`
	LastTime time.Time `json:"lastTime,omitzero"`
}

// The inputs of a pressure decision that a reader renders it from: the
// ScaleValue published and the previous one.
const (
	InputScaleValue     = "scale_value"
	InputPrevScaleValue = "prev_scale_value"
)

// At renders e for a reader whose trigger asks ReplicasAt(scaleValue)
// replicas: a pressure decision's counts and action become that reader's
// (the trigger's own target, docs/semantics.md); any other is unchanged.
func (e Event) At(replicasAt func(scaleValue float64) int) Event {
	cur, ok1 := e.Inputs[InputScaleValue]
	prev, ok2 := e.Inputs[InputPrevScaleValue]
	if !ok1 || !ok2 {
		return e
	}
	e.Before, e.After = replicasAt(prev), replicasAt(cur)
	switch {
	case e.After > e.Before:
		e.Action = policy.ScaleUp
	case e.After < e.Before:
		e.Action = policy.ScaleDown
	default:
		e.Action = policy.NoOp
	}
	return e
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
