package pressure

import "time"

// QueueObservation is the work queue a workload reports, for the queue and
// elasticity policies. Counters are raw cumulative values (the policies
// derive rates themselves); gauges are current values. A source that reads
// several replicas sums them.
type QueueObservation struct {
	// Arrivals counts work that became ready, cumulatively.
	Arrivals float64
	// RunSeconds and Runs are the cumulative sum and count of observed run
	// durations (a histogram's or summary's _sum and _count).
	RunSeconds, Runs float64
	// Backlog is ready and retrying work by class, in the order the source
	// read it; entries of the same class add up.
	Backlog []ClassBacklog
	// Due is fixed-start work that is due now.
	Due float64
	// Busy is the number of slots running work.
	Busy float64
	// Reservations are the reserved slots, by interval.
	Reservations []Reservation
}

// ClassBacklog is one class's waiting work.
type ClassBacklog struct {
	Class           string
	Ready, Retrying float64
}

// Reservation reserves Slots over [Start, End); a zero Start or End is open
// on that side, so a plain "reserved now" gauge is Reservation{Slots: n}.
type Reservation struct {
	Start, End time.Time
	Slots      float64
}

// Pending is the whole backlog: ready and retrying work of every class plus
// due fixed-start work.
func (q QueueObservation) Pending() float64 {
	total := q.Due
	for _, b := range q.Backlog {
		total += b.Ready + b.Retrying
	}
	return total
}
