package sim

import (
	"slices"
	"time"
)

// QueueSample is the work queue as one sample sees it: what a queue-aware
// source exports (pkg/policy's QueueObservation), measured like the
// occupancy, across the replicas that were ready when it was taken.
//
// The queue is fluid and first in, first out: a replica does one second of
// work per second, so it serves Saturation requests/s of a load series (a
// request is 1/Saturation s of work) and a queue trace's items at their
// service time. Work the replicas cannot do in a turn waits in a queue
// trace; a load series is request traffic, whose excess is shed at the end
// of the turn, as in the metric-delay model (each turn is scored on its own
// load; docs/semantics.md, "Metric delay").
type QueueSample struct {
	// Arrivals counts items that arrived, through the sampled turn (a
	// counter). A load series' items are its requests.
	Arrivals float64
	// Runs and RunSeconds count the items completed and their run time,
	// through the sampled turn (a histogram's _count and _sum).
	Runs, RunSeconds float64
	// Backlog is the items still waiting at the end of the sampled turn.
	Backlog float64
	// Busy is the mean number of replicas running work in the turn: the
	// served work over the turn length (a gauge averaged over the turn, at
	// most the replicas).
	Busy float64
	// Offered is the turn's offered load in the series' unit: its load plus
	// the work carried into it, as load. Occupancy = Offered / (Replicas x
	// Saturation).
	Offered float64
}

// batch is the items that arrived in one turn and are not yet served.
type batch struct {
	turn    int
	items   float64
	service float64 // seconds of one replica per item
}

// fluidQueue is the run's work queue, first in, first out.
type fluidQueue struct {
	trace    *QueueTrace // nil: a load series, whose excess is shed
	perItem  float64     // a load series' seconds per request
	seconds  float64     // turn length in seconds
	batches  []batch
	arrived  float64
	runs     float64
	runSecs  float64
	waited   float64 // item-turns waited by the served items
	maxWait  int     // turns
	lastTurn int
}

// queueEpsilon is the work (seconds) or item count below which a remainder
// counts as gone, so float noise never leaves a phantom backlog.
const queueEpsilon = 1e-9

func newFluidQueue(s Series, m Model, turn time.Duration) *fluidQueue {
	return &fluidQueue{trace: s.Queue, perItem: 1 / m.Saturation, seconds: turn.Seconds()}
}

// arrive adds turn t's items and returns the work (seconds) carried into
// the turn from earlier ones.
func (q *fluidQueue) arrive(t int, load float64) float64 {
	carried := q.work()
	items, service := float64(load*q.seconds), q.perItem
	if q.trace != nil {
		items, service = q.trace.Arrivals[t], q.trace.Service[t]
	}
	if items > 0 {
		q.batches = append(q.batches, batch{turn: t, items: items, service: service})
		q.arrived += items
	}
	q.lastTurn = t
	return carried
}

// sample is what the turn looks like served by ready replicas, without
// serving it: the sample is taken before the decision, as the occupancy is.
func (q *fluidQueue) sample(ready int, offered float64) QueueSample {
	c := *q
	c.batches = slices.Clone(q.batches)
	capacity := float64(float64(ready) * q.seconds)
	served := c.consume(capacity)
	return QueueSample{Arrivals: c.arrived, Runs: c.runs, RunSeconds: c.runSecs, Backlog: c.items(),
		Busy: min(float64(ready), served/q.seconds), Offered: offered}
}

// serve serves the turn with ready replicas, sheds a load series' excess,
// and returns the items left waiting.
func (q *fluidQueue) serve(ready int) float64 {
	q.consume(float64(float64(ready) * q.seconds))
	if q.trace == nil {
		q.batches = q.batches[:0]
	}
	return q.items()
}

// consume serves up to capacity seconds of work, oldest first, and returns
// the work served.
func (q *fluidQueue) consume(capacity float64) float64 {
	served := 0.0
	for len(q.batches) > 0 && capacity > queueEpsilon {
		b := &q.batches[0]
		items := b.items
		if w := float64(b.items * b.service); w > capacity+queueEpsilon {
			items = capacity / b.service
		}
		work := float64(items * b.service)
		q.runs, q.runSecs = q.runs+items, q.runSecs+work
		q.waited += float64(items * float64(q.lastTurn-b.turn))
		q.maxWait = max(q.maxWait, q.lastTurn-b.turn)
		served, capacity = served+work, capacity-work
		if b.items -= items; b.items <= queueEpsilon {
			q.batches = q.batches[1:]
		}
	}
	return served
}

func (q *fluidQueue) work() float64 {
	w := 0.0
	for _, b := range q.batches {
		w += float64(b.items * b.service)
	}
	return w
}

func (q *fluidQueue) items() float64 {
	n := 0.0
	for _, b := range q.batches {
		n += b.items
	}
	return n
}

// waits sets the score's queueing delays: the served items' mean, and the
// longest wait, counting the items still waiting after the last turn.
func (q *fluidQueue) waits(sc *Score) {
	longest := q.maxWait
	for _, b := range q.batches {
		longest = max(longest, q.lastTurn+1-b.turn)
	}
	sc.MaxWait = float64(float64(longest) * q.seconds)
	if q.runs > 0 {
		sc.MeanWait = float64(q.waited*q.seconds) / q.runs
	}
}
