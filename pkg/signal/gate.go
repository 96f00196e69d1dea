package signal

import "time"

// scaleInGate allows scale-in only after every precondition has held
// continuously for a window. Not safe for concurrent use; owned by one
// Computer.
type scaleInGate struct {
	window        time.Duration
	eligibleSince time.Time
	armed         bool
}

// observe records whether this sample is eligible and reports whether
// scale-in is allowed. An ineligible sample resets the window. The sample
// that arms the gate never releases it, even with a zero window: one good
// sample is not evidence that load has gone.
func (g *scaleInGate) observe(eligible bool, now time.Time) bool {
	if !eligible {
		g.armed = false
		return false
	}
	if !g.armed {
		g.armed, g.eligibleSince = true, now
		return false
	}
	return now.Sub(g.eligibleSince) >= g.window
}
