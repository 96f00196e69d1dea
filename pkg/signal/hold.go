package signal

import (
	"math"
	"math/bits"
	"time"
)

// MaxScaleInHoldSamples bounds the samples the churn budget keeps: at a
// 5 s interval, 20 minutes.
const MaxScaleInHoldSamples = 240

// The churn budget's rent-or-buy (docs/compensation.md, "The churn
// budget").
const (
	// holdTrust is how far the learnt prediction moves the break-even
	// point, the λ of the ski-rental algorithm with predictions: a
	// surplus whose drops the workload has mostly undone is kept 1 / λ
	// times its break-even, one whose drops have lasted λ times it. Its
	// worst case is 1 + 1 / λ times the best choice in hindsight (3), its
	// case with a right prediction 1 + λ (1.5).
	holdTrust = 0.5
	// holdOutcomes is how many of the latest priced drops the prediction
	// reads.
	holdOutcomes = 16
)

// hold is the churn budget. A rise is published at once. A fall is a
// rent-or-buy choice: keeping a surplus costs its replicas' time, dropping
// it costs a change if the demand comes back. The surplus over a level x
// is kept until it has cost the price of a change over a stretch of
// samples that all asked for at most x, then dropped to x: S replicas of
// surplus are kept for price / S beyond the start-up, at most the whole
// window. With no price, a fall waits the whole window (the highest value
// asked for within it). The break-even moves with what the workload did
// to the latest drops: where most were undone within the window (the
// demand came back above the level dropped to), a surplus is kept twice
// as long; where they lasted, half as long.
//
// Its ring grows only while every sample it holds is still inside the
// window, so it holds what the window needs (window / interval samples),
// not MaxScaleInHoldSamples for every target. Not safe for concurrent
// use; owned by one Computer.
type hold struct {
	window time.Duration // the longest a surplus is kept
	price  float64       // a change's price beyond the start-up, in replica-seconds; 0: none
	target float64       // the autoscaler's per-replica target, > 0
	n      int
	next   int
	ring   []heldValue
	held   float64 // the value published
	// wrapped: a sample has been written over, which the ring does only
	// to one already out of the window (or at its bound).
	wrapped bool
	fell    int64 // when the last fall was published, unix nanoseconds

	dropped   int64   // when the last priced fall was published, unix nanoseconds
	dropLevel float64 // the level it fell to
	pending   bool    // its outcome is not known yet
	undone    uint32  // the latest outcomes, newest in bit 0: 1 when undone
	outcomes  int     // outcomes known, up to holdOutcomes
}

// heldValue is one value asked for and when.
type heldValue struct {
	at int64 // unix nanoseconds: a third of a time.Time
	v  float64
}

// observe records the value asked for at now and returns the value to
// publish: v on a rise, otherwise the lowest level the held surplus has
// paid its way down to. startup is how long a replica brought back would
// take to serve: a change undone costs every replica it brings back that
// long again.
func (h *hold) observe(v float64, now time.Time, startup time.Duration) float64 {
	if h.window <= 0 {
		return v
	}
	at := now.UnixNano()
	if h.pending {
		switch {
		case replicasAt(v, h.target) > replicasAt(h.dropLevel, h.target):
			h.learn(true)
		case time.Duration(at-h.dropped) >= h.window:
			h.learn(false)
		}
	}
	if h.n == len(h.ring) && h.n < MaxScaleInHoldSamples && (h.n == 0 || time.Duration(at-h.ring[h.next].at) < h.window) {
		h.grow()
	}
	size := len(h.ring)
	h.wrapped = h.wrapped || h.n == size
	h.ring[h.next] = heldValue{at: at, v: v}
	h.next = (h.next + 1) % size
	h.n = min(h.n+1, size)
	if v >= h.held {
		h.held = v
		return v
	}
	// From the newest sample back: x is the most any of them asked for,
	// and the surplus over x has been kept since the oldest of them, or
	// since the last fall, which paid for what came before it.
	x := v
	i := 1
	for ; i < h.n; i++ {
		j := (h.next - 1 - i + size) % size
		age := time.Duration(at - h.ring[j].at)
		if age >= h.window {
			break
		}
		x = max(x, h.ring[j].v)
		if x >= h.held {
			return h.held
		}
		if h.price > 0 && h.paid(x, min(age, time.Duration(at-h.fell)), startup) {
			if h.pending {
				h.learn(false) // dropped again before it was undone
			}
			h.held, h.fell = x, at
			h.dropped, h.dropLevel, h.pending = at, x, true
			return h.held
		}
	}
	if i < h.n || h.wrapped {
		// Kept the whole window (or as much of it as the ring holds, the
		// samples written over being older): dropped whatever its price.
		h.held, h.fell = x, at
	}
	return h.held
}

// paid reports whether keeping the surplus of the held value over x for
// kept has cost the price of dropping it: the replicas it keeps times
// kept, against the price plus their start-up, the price moved by what
// the latest drops predict.
func (h *hold) paid(x float64, kept, startup time.Duration) bool {
	surplus := replicasAt(h.held, h.target) - replicasAt(x, h.target)
	if surplus <= 0 {
		return false
	}
	price := h.price
	if undone, ok := h.undoneShare(); ok {
		if undone > 0.5 {
			price /= holdTrust
		} else {
			price *= holdTrust
		}
	}
	return surplus*(kept-startup).Seconds() >= price
}

// learn records the outcome of the last priced drop.
func (h *hold) learn(undone bool) {
	h.undone <<= 1
	if undone {
		h.undone |= 1
	}
	h.outcomes = min(h.outcomes+1, holdOutcomes)
	h.pending = false
}

// undoneShare is the share of the latest priced drops that were undone
// within the window; false before any is known.
func (h *hold) undoneShare() (float64, bool) {
	if h.outcomes == 0 {
		return 0, false
	}
	mask := uint32(1)<<h.outcomes - 1
	return float64(bits.OnesCount32(h.undone&mask)) / float64(h.outcomes), true
}

// replicasAt is the replica count an autoscaler asks for at target:
// ceil(value / target), a rounding error above a whole count being that
// count.
func replicasAt(value, target float64) float64 {
	return math.Ceil(value/target - 1e-9)
}

// grow doubles the full ring (from a few samples, up to
// MaxScaleInHoldSamples), oldest first.
func (h *hold) grow() {
	grown := make([]heldValue, min(MaxScaleInHoldSamples, max(4, 2*len(h.ring))))
	for i := range h.n {
		grown[i] = h.ring[(h.next+i)%len(h.ring)]
	}
	h.ring, h.next = grown, h.n
}
