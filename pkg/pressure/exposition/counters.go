package exposition

import (
	"math"
	"slices"
	"strings"
	"time"
)

// CounterTTL is how long QueueCounters remember a replica they no longer
// read. Forgetting one never changes the sum; it only means that, should the
// replica come back later, it is counted as a newcomer.
const CounterTTL = 10 * time.Minute

// CounterSum is one counter summed across replicas so that the sum only
// falls when every replica's counter would have to: the queue policy reads a
// counter that falls as restarted from zero, and would then count the whole
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
// While no replica restarts or leaves, the sum is exactly the sum of the
// replicas' counters. The sum is this CounterSum's own: a new one (a
// restarted scaler, a changed source) starts again from the plain sum.
type CounterSum struct {
	offset float64 // what departed and restarted replicas counted, less newcomers' start
	last   map[string]counterMark
	seeded bool
}

type counterMark struct {
	v    float64
	seen time.Time
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
		c.offset -= v
	case known && v < m.v:
		c.offset += m.v
	}
	c.last[replica] = counterMark{v: v, seen: at}
}

// Settle ends the sample taken at at: it forgets replicas unread for ttl
// (keeping their count) and returns the sum. Call it once per sample, after
// every Observe. ok is false while no replica was ever read.
func (c *CounterSum) Settle(at time.Time, ttl time.Duration) (sum float64, ok bool) {
	names := make([]string, 0, len(c.last))
	for name, m := range c.last {
		if at.Sub(m.seen) > ttl {
			c.offset += m.v
			delete(c.last, name)
			continue
		}
		names = append(names, name)
	}
	c.seeded = c.seeded || len(c.last) > 0
	// A fixed order makes the float sum the same in every source that read
	// the same values.
	slices.SortFunc(names, strings.Compare)
	sum = c.offset
	for _, name := range names {
		sum += c.last[name].v
	}
	return sum, c.seeded
}

// QueueCounters are the queue's three counters, each a CounterSum.
type QueueCounters struct {
	Arrivals, RunSeconds, Runs CounterSum
}
