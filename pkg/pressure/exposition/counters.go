package exposition

import (
	"math"
	"time"
)

// CounterTTL is how long QueueCounters remember a replica they no longer
// read. Forgetting one never changes the sum; it only means that, should the
// replica come back later, it is counted as a newcomer.
const CounterTTL = 10 * time.Minute

// CounterSum is one counter summed across replicas so that the sum never
// falls: the queue policy reads a counter that falls as restarted from zero, and would then count the whole
// sum as new work, a burst that never happened. A plain sum falls whenever a
// replica drops out of a sample (a failed scrape, a pod scaled in), so:
//
//   - a replica not read this sample keeps its last reading in the sum;
//   - a replica whose counter fell restarted, as Prometheus reads a counter
//     reset: what it had counted stays in the sum and it counts on from 0;
//   - a replica first seen after the first sample adds only what it counts
//     from then on: its earlier count may predate this source (a replica
//     that missed the first sample) and would read as a burst. The first
//     sample adds every replica in full, so the policy's first evaluation
//     sees the counters' whole history, as it expects for run times;
//   - a replica unread for CounterTTL is forgotten, its count kept.
//
// While no replica restarts or leaves, the sum is the sum of the replicas'
// counters. The sum is this CounterSum's own: a new one (a restarted
// scaler, a changed source) starts again from the plain sum.
//
// The sum never falls, by construction rather than by a clamp: each replica
// counts reading - base, where base is 0, or a late newcomer's first
// reading, and the reading only rises while base holds (a fall is a
// restart, which moves the count to retired and sets base to 0), so every
// term is >= 0 and only grows; a restart or a forgotten replica moves its
// term to retired unchanged. The terms are added exactly (see exact) and
// rounded to float64 once, and rounding is monotone, so neither the order of
// the replicas nor cancellation between a newcomer's base and the rest can
// make the sum fall by an ulp, or go below 0. A sum past the float64 range
// stays at math.MaxFloat64.
type CounterSum struct {
	retired exact // what departed and restarted replicas counted
	last    map[string]counterMark
	seeded  bool
}

type counterMark struct {
	v, base float64 // the replica counted v - base
	seen    time.Time
}

// Observe records replica's reading at the sample taken at at; the replica
// name is whatever tells replicas apart for the source (a scraped URL, a pod
// label). Call it at most once per replica and sample, with the sum of the
// replica's series. A reading that is not a finite number >= 0 is ignored, as if the
// replica had not been read: a NaN would poison the sum for good.
func (c *CounterSum) Observe(replica string, v float64, at time.Time) {
	if !(v >= 0) || math.IsInf(v, 1) {
		return
	}
	if c.last == nil {
		c.last = map[string]counterMark{}
	}
	m, known := c.last[replica]
	switch {
	case !known && c.seeded:
		m.base = v
	case !known:
		m.base = 0
	case v < m.v:
		c.retired.addCounted(m.v, m.base)
		m.base = 0
	}
	c.last[replica] = counterMark{v: v, base: m.base, seen: at}
}

// Settle ends the sample taken at at: it forgets replicas unread for ttl
// (keeping their count) and returns the sum. Call it once per sample, after
// every Observe. ok is false while no replica was ever read.
func (c *CounterSum) Settle(at time.Time, ttl time.Duration) (sum float64, ok bool) {
	var total exact
	total.addExact(&c.retired)
	for name, m := range c.last {
		if at.Sub(m.seen) > ttl {
			c.retired.addCounted(m.v, m.base)
			delete(c.last, name)
		}
		// Counted either way: forgetting moves the term, unchanged.
		total.addCounted(m.v, m.base)
	}
	c.seeded = c.seeded || len(c.last) > 0
	return saturate(total.float64()), c.seeded
}

// QueueCounters are the queue's three counters, each a CounterSum.
type QueueCounters struct {
	Arrivals, RunSeconds, Runs CounterSum
}
