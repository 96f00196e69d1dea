package signal

import (
	"math"
	"time"
)

// autoscalerTolerance is the HPA's default tolerance: it leaves the
// replicas alone while the value is within 10 % of what they carry at
// the target.
const autoscalerTolerance = 0.1

// autoscalerSync is the HPA's default sync period: a pool that has not
// grown within one sync (and the start-up) of an ask is held, not in
// transition.
const autoscalerSync = 15 * time.Second

// asks keeps the values the computer published, newest last, so a sample
// can be read against what had been asked for when its data was measured.
// Not safe for concurrent use; owned by one Computer.
type asks struct {
	n, next int
	ring    [budgetSpreadSamples]heldValue
}

func (a *asks) add(now time.Time, v float64) {
	a.ring[a.next] = heldValue{at: now.UnixNano(), v: v}
	a.next = (a.next + 1) % len(a.ring)
	a.n = min(a.n+1, len(a.ring))
}

// inTransit reports whether a sample of n replicas, its data measured at
// measured, read a pool in transition: every value the signal published
// from a start-up before measured (the replicas asked for then had had
// their start-up) to measured asked for more replicas than n, by more
// than the autoscaler's tolerance, so the autoscaler had not yet brought
// what the signal asked for. A lower value published in between is a
// scale-in the pool may have followed at once. false when the values
// held do not reach a start-up back.
func (a *asks) inTransit(measured time.Time, startup time.Duration, n int, target float64) bool {
	t, by := measured.UnixNano(), measured.Add(-startup).UnixNano()
	least := math.Inf(1)
	for i := 1; i <= a.n; i++ {
		ask := a.ring[(a.next-i+len(a.ring))%len(a.ring)]
		if ask.at >= t {
			continue // published after the data was measured
		}
		least = min(least, ask.v)
		if ask.at <= by {
			return least > target*float64(n)*(1+autoscalerTolerance)
		}
	}
	return false
}
