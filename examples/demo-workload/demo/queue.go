package demo

import (
	"maps"
	"math"
	"time"
)

// queue is the replica's work queue in queue mode: one FIFO of ready work
// served at Capacity per second, every run taking exactly the service time.
// It is a fluid model, integrated as time passes like the CPU counter, so
// its counters between two scrapes are exactly what the load between them
// produced.
type queue struct {
	arrivals   float64 // work that became ready, cumulatively
	served     float64 // work completed, cumulatively
	runSeconds float64 // the run time of the whole runs served, cumulatively
	backlog    float64 // ready work waiting for a slot
	service    time.Duration
	// Set from outside, for the parts of the contract the load does not
	// drive: work waiting for a retry, fixed-start work due, reservations.
	retrying, due, reserved float64
	reservations            map[string]Reservation
}

// Reservation is one reservation the replica exposes: an interval in Unix
// seconds (0 is open on that side) and the slots it holds.
type Reservation struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Slots float64 `json:"slots"`
}

// advance integrates dt seconds at rps arrivals per second. Over the
// interval the backlog moves by rps - capacity and never below 0, and what
// was served is what arrived plus what the backlog lost. A run counts when
// it completes whole, so the histogram's sum and count agree: their ratio
// is the service time exactly.
func (q *queue) advance(rps, capacity, dt float64) {
	q.arrivals += rps * dt
	end := max(0, q.backlog+(rps-capacity)*dt)
	served := rps*dt + q.backlog - end
	q.backlog = end
	whole := math.Floor(q.served)
	q.served += served
	q.runSeconds += (math.Floor(q.served) - whole) * q.service.Seconds()
}

// QueueState is what the replica's queue shows; nil outside queue mode.
type QueueState struct {
	Class       string  `json:"class"`
	ServiceTime float64 `json:"serviceTimeSeconds"`
	// Slots is how many runs fit at once: Capacity x ServiceTime.
	Slots        float64                `json:"slots"`
	Arrivals     float64                `json:"arrivals"`
	Runs         float64                `json:"runs"`
	RunSeconds   float64                `json:"runSeconds"`
	Ready        float64                `json:"ready"`
	Retrying     float64                `json:"retrying"`
	Due          float64                `json:"due"`
	Busy         float64                `json:"busy"`
	Reserved     float64                `json:"reserved"`
	Reservations map[string]Reservation `json:"reservations,omitempty"`
}

// state reads the queue under rps; w.mu is held and advance has run.
// Runs are whole (a histogram counts them in integers) and so is the ready
// backlog; busy is the runs in flight by Little's law, rps (or capacity
// while a backlog waits) times the service time, within the slots.
func (q *queue) state(rps, capacity float64, class string) *QueueState {
	s := q.service.Seconds()
	rate := min(rps, capacity)
	if q.backlog > 0 {
		rate = capacity
	}
	slots := capacity * s
	return &QueueState{
		Class:        class,
		ServiceTime:  s,
		Slots:        slots,
		Arrivals:     q.arrivals,
		Runs:         math.Floor(q.served),
		RunSeconds:   q.runSeconds,
		Ready:        math.Floor(q.backlog),
		Retrying:     q.retrying,
		Due:          q.due,
		Busy:         math.Round(min(slots, rate*s)),
		Reserved:     q.reserved,
		Reservations: maps.Clone(q.reservations),
	}
}

// withQueue runs fn on the queue under w.mu, with time accounted up to now
// first; it does nothing outside queue mode.
func (w *Workload) withQueue(fn func(q *queue)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.queue == nil {
		return
	}
	w.advance()
	fn(w.queue)
}

// SetServiceTime sets how long one run takes (<= 0 keeps the current one).
func (w *Workload) SetServiceTime(d time.Duration) {
	w.withQueue(func(q *queue) {
		if d > 0 {
			q.service = d
		}
	})
}

// SetBacklog sets the ready backlog, as if that much work had piled up
// before (it is not counted as arrivals; it is counted as runs once served).
func (w *Workload) SetBacklog(n float64) { w.withQueue(func(q *queue) { q.backlog = max(n, 0) }) }

// SetRetrying sets the work waiting for a retry.
func (w *Workload) SetRetrying(n float64) { w.withQueue(func(q *queue) { q.retrying = max(n, 0) }) }

// SetDue sets the fixed-start work that is due.
func (w *Workload) SetDue(n float64) { w.withQueue(func(q *queue) { q.due = max(n, 0) }) }

// SetReserved sets the plain reserved-slots gauge.
func (w *Workload) SetReserved(n float64) { w.withQueue(func(q *queue) { q.reserved = max(n, 0) }) }

// SetReservation adds or replaces reservation id.
func (w *Workload) SetReservation(id string, r Reservation) {
	w.withQueue(func(q *queue) {
		if q.reservations == nil {
			q.reservations = map[string]Reservation{}
		}
		q.reservations[id] = r
	})
}

// DeleteReservation removes reservation id.
func (w *Workload) DeleteReservation(id string) {
	w.withQueue(func(q *queue) { delete(q.reservations, id) })
}
