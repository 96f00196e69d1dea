package exposition

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// QueueFold gathers one sample's queue series, from every replica a scrape
// read or every series a Prometheus query returned, into one
// pressure.QueueObservation. Both sources feed it series by series, so they
// fold alike:
//
//   - counters are summed per replica, then across replicas by the
//     source's QueueCounters (see CounterSum);
//   - gauges are summed across every series: backlog per class (series
//     without a class label are class ""), due, busy and the plain reserved
//     gauge;
//   - reservations are joined on their id across series and replicas: the
//     same id from several replicas is one reservation (a shared scheduler's
//     view), its start the earliest reported (0, already started, is the
//     earliest), its end the latest (0, open-ended, is later than any) and
//     its slots the largest; slots are 1 when no series gives them;
//   - a value that is not a finite number >= 0 is left out, as if absent,
//     and a sum past the float64 range is math.MaxFloat64, so that no
//     number in the observation is ever negative or infinite.
//
// A QueueFold is for one sample; the zero value is ready to use.
type QueueFold struct {
	seen     bool
	counters [3]map[string]*reading
	backlog  map[string]*pressure.ClassBacklog
	due      float64
	busy     float64
	reserved float64
	res      map[string]*reservation
}

// reading is one replica's counter in one sample: the sum of its series,
// unusable when any of them was. The sum is exact, so it does not depend on
// the order the series came in (a Prometheus result has none): a float sum
// of the same series in another order can be one ulp lower, which
// CounterSum would read as a restart and count the replica's whole history
// again.
type reading struct {
	first float64 // the only series, the common case, needs no exact sum
	n     int
	more  exact
	bad   bool
}

func (r *reading) value() float64 {
	if r.n == 1 {
		return r.first
	}
	return r.more.float64()
}

type reservation struct {
	start, end, slots  float64
	hasStart, hasSlots bool
	openEnd            bool // an end of 0 was reported: no end
}

// The counters, as indexes of QueueFold.counters.
const (
	counterArrivals = iota
	counterRunSeconds
	counterRuns
)

func usable(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// Arrivals, RunSeconds and Runs add one series of a replica's counter.
func (f *QueueFold) Arrivals(replica string, v float64)   { f.count(counterArrivals, replica, v) }
func (f *QueueFold) RunSeconds(replica string, v float64) { f.count(counterRunSeconds, replica, v) }
func (f *QueueFold) Runs(replica string, v float64)       { f.count(counterRuns, replica, v) }

func (f *QueueFold) count(c int, replica string, v float64) {
	f.seen = true
	if f.counters[c] == nil {
		f.counters[c] = map[string]*reading{}
	}
	r := f.counters[c][replica]
	if r == nil {
		r = &reading{}
		f.counters[c][replica] = r
	}
	// One unusable series makes the replica's sum a partial one, which
	// could read as a fall; the replica is then held, as if not read.
	if r.bad = r.bad || !usable(v); r.bad {
		return
	}
	if r.n++; r.n == 1 {
		r.first = v
		return
	}
	if r.n == 2 {
		r.more.add(r.first)
	}
	r.more.add(v)
}

// Ready and Retrying add one backlog series of a class.
func (f *QueueFold) Ready(class string, v float64) {
	if b := f.class(class, v); b != nil {
		b.Ready += v
	}
}

func (f *QueueFold) Retrying(class string, v float64) {
	if b := f.class(class, v); b != nil {
		b.Retrying += v
	}
}

func (f *QueueFold) class(name string, v float64) *pressure.ClassBacklog {
	if !usable(v) {
		return nil
	}
	f.seen = true
	if f.backlog == nil {
		f.backlog = map[string]*pressure.ClassBacklog{}
	}
	b := f.backlog[name]
	if b == nil {
		b = &pressure.ClassBacklog{Class: name}
		f.backlog[name] = b
	}
	return b
}

// Due, Busy and Reserved add one series of their gauge.
func (f *QueueFold) Due(v float64)      { f.gauge(&f.due, v) }
func (f *QueueFold) Busy(v float64)     { f.gauge(&f.busy, v) }
func (f *QueueFold) Reserved(v float64) { f.gauge(&f.reserved, v) }

func (f *QueueFold) gauge(dst *float64, v float64) {
	if usable(v) {
		f.seen = true
		*dst += v
	}
}

// ReservationStart, ReservationEnd and ReservationSlots add one series of
// reservation id. Series without an id are the caller's to refuse or skip.
func (f *QueueFold) ReservationStart(id string, v float64) {
	if r := f.reservation(id, v); r != nil {
		if !r.hasStart || v < r.start {
			r.start, r.hasStart = v, true
		}
	}
}

// An end of 0 is open-ended, so it outlasts every end: one replica that
// holds the reservation open keeps it open.
func (f *QueueFold) ReservationEnd(id string, v float64) {
	if r := f.reservation(id, v); r != nil {
		r.end, r.openEnd = max(r.end, v), r.openEnd || v == 0
	}
}

func (f *QueueFold) ReservationSlots(id string, v float64) {
	if r := f.reservation(id, v); r != nil {
		r.slots, r.hasSlots = max(r.slots, v), true
	}
}

func (f *QueueFold) reservation(id string, v float64) *reservation {
	if !usable(v) {
		return nil
	}
	f.seen = true
	if f.res == nil {
		f.res = map[string]*reservation{}
	}
	r := f.res[id]
	if r == nil {
		r = &reservation{}
		f.res[id] = r
	}
	return r
}

// Observation feeds the sample's counter readings to c, settles it, and
// returns the queue: nil when the sample had no queue series at all, so a
// workload that exposes none has no queue view. Call it once per sample,
// even when it returns nil, so c forgets replicas on time.
func (f *QueueFold) Observation(c *QueueCounters, at time.Time) *pressure.QueueObservation {
	sums := [3]*CounterSum{counterArrivals: &c.Arrivals, counterRunSeconds: &c.RunSeconds, counterRuns: &c.Runs}
	var totals [3]float64
	for i, sum := range sums {
		for replica, r := range f.counters[i] {
			if !r.bad {
				sum.Observe(replica, r.value(), at) // +Inf past float64: held
			}
		}
		totals[i], _ = sum.Settle(at, CounterTTL)
	}
	if !f.seen {
		return nil
	}
	q := &pressure.QueueObservation{
		Arrivals:   totals[counterArrivals],
		RunSeconds: totals[counterRunSeconds],
		Runs:       totals[counterRuns],
		Due:        saturate(f.due),
		Busy:       saturate(f.busy),
	}
	for _, b := range f.backlog {
		q.Backlog = append(q.Backlog, pressure.ClassBacklog{Class: b.Class, Ready: saturate(b.Ready), Retrying: saturate(b.Retrying)})
	}
	slices.SortFunc(q.Backlog, func(a, b pressure.ClassBacklog) int { return strings.Compare(a.Class, b.Class) })
	q.Reservations = f.reservations()
	return q
}

// reservations lists the joined reservations by id, then the plain gauge's.
// A reservation of no slots says nothing and is left out.
func (f *QueueFold) reservations() []pressure.Reservation {
	ids := make([]string, 0, len(f.res))
	for id := range f.res {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []pressure.Reservation
	for _, id := range ids {
		r := f.res[id]
		slots := 1.0
		if r.hasSlots {
			slots = r.slots
		}
		end := UnixTime(r.end)
		if r.openEnd {
			end = time.Time{}
		}
		if slots > 0 {
			out = append(out, pressure.Reservation{Start: UnixTime(r.start), End: end, Slots: slots})
		}
	}
	if f.reserved > 0 {
		out = append(out, pressure.Reservation{Slots: saturate(f.reserved)})
	}
	return out
}

// QueueKind is which part of the queue contract a series is, for Add.
type QueueKind int

const (
	KindArrivals QueueKind = iota
	KindRunSeconds
	KindRuns
	KindReady
	KindRetrying
	KindDue
	KindBusy
	KindReserved
	KindReservationStart
	KindReservationEnd
	KindReservationSlots
)

// Reservation says the kind's series are joined on a reservation id.
func (k QueueKind) Reservation() bool { return k >= KindReservationStart }

// Add adds one series of kind: replica names the replica of a counter;
// label is the class of a backlog series and the id of a reservation
// series, and is ignored otherwise. A reservation series without an id is
// the caller's to refuse or skip, as for ReservationStart. An unknown kind
// is ignored.
func (f *QueueFold) Add(kind QueueKind, replica, label string, v float64) {
	switch kind {
	case KindArrivals:
		f.Arrivals(replica, v)
	case KindRunSeconds:
		f.RunSeconds(replica, v)
	case KindRuns:
		f.Runs(replica, v)
	case KindReady:
		f.Ready(label, v)
	case KindRetrying:
		f.Retrying(label, v)
	case KindDue:
		f.Due(v)
	case KindBusy:
		f.Busy(v)
	case KindReserved:
		f.Reserved(v)
	case KindReservationStart:
		f.ReservationStart(label, v)
	case KindReservationEnd:
		f.ReservationEnd(label, v)
	case KindReservationSlots:
		f.ReservationSlots(label, v)
	}
}

// maxUnix is the last second of year 9999: a later timestamp is clamped to
// it rather than overflowing time.Time's arithmetic.
const maxUnix = 253402300799

// UnixTime reads a timestamp gauge in seconds: 0 (open on that side) is the
// zero time; fractions of a second are kept.
func UnixTime(v float64) time.Time {
	if !(v > 0) {
		return time.Time{}
	}
	sec, frac := math.Modf(min(v, maxUnix))
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}
