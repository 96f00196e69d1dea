package policy

import (
	"math"
	"time"
)

// Policy names, as the `policy` metadata key spells them.
const (
	PolicyQueue             = "queue"
	PolicyFixed             = "fixed"
	PolicyFullyElastic      = "fully_elastic"
	PolicyMaxCount          = "max_count"
	PolicyPoolWithThreshold = "pool_with_threshold"
)

// Unbounded is a replica maximum that bounds nothing. It is the largest int,
// so min(x, Unbounded) needs no special case.
const Unbounded = math.MaxInt

// Action is what a decision does to the replica count.
type Action string

// The three actions of a decision (docs/semantics.md, "The elasticity
// policies").
const (
	ScaleUp   Action = "scale_up"
	ScaleDown Action = "scale_down"
	NoOp      Action = "no-op"
)

// Decision is one policy's answer for one target (or pool) at one
// evaluation. It is a value: nothing in it is shared with the policy state,
// and Inputs is never written after the decision is made.
type Decision struct {
	// At is the evaluation time the decision was made for.
	At time.Time
	// Policy is the policy's name (an unknown name is kept as given).
	Policy string
	Action Action
	// Before is the replica count the decision started from, "current": the
	// visible replicas plus the net change still in flight (launches less
	// removals), at least 0.
	Before int
	// Desired is the replica count to publish. The KEDA side returns it with
	// target 1 (AverageValue), so the HPA asks for exactly this count.
	Desired int
	// Reason says, in words, which rule decided and with which numbers.
	Reason string
	// Inputs are the numbers the policy used, by name, for the audit trail.
	Inputs map[string]float64
}

// downgrade turns a decision that cannot be carried out into a no-op and
// appends why, as for a failed launch or a scale-down with no idle
// replica: the loop never wedges on one bad step (docs/semantics.md,
// "Scale-down: idle only, cost first").
func (d Decision) downgrade(cause string) Decision {
	d.Action, d.Desired = NoOp, d.Before
	d.Reason += "; downgraded to no-op: " + cause
	return d
}

// CeilCount rounds a demand, or a gauge of work items, up to a whole count:
// part of an item is still work. The tolerance keeps float noise (0.1 x 6 =
// 0.6000000000000001) from asking for a replica nobody needs; NaN and
// negatives are 0, and a demand beyond any int saturates at Unbounded.
func CeilCount(x float64) int {
	if !(x > 0) { // also catches NaN
		return 0
	}
	c := math.Ceil(x - 1e-9)
	if c >= float64(Unbounded) {
		return Unbounded
	}
	return int(c)
}

// currentCount is "current": the visible replicas plus the net change in
// flight (LaunchTracker.Observe), never below 0.
func currentCount(replicas, inFlight int) int {
	return max(max(replicas, 0)+inFlight, 0)
}

// currentText says how current was counted: "current 4 = 2 seen +2 in
// flight", "current 4 = 5 seen -1 leaving", or "current 4".
func currentText(replicas, inFlight int) string {
	s := "current " + itoa(currentCount(replicas, inFlight))
	switch {
	case inFlight > 0:
		s += " = " + itoa(replicas) + " seen +" + itoa(inFlight) + " in flight"
	case inFlight < 0:
		s += " = " + itoa(replicas) + " seen -" + itoa(-inFlight) + " leaving"
	}
	return s
}

// BoundText prints a maximum, which may be Unbounded.
func BoundText(n int) string {
	if n == Unbounded {
		return "unbounded"
	}
	return itoa(n)
}
