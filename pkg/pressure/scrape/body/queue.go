package body

import (
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// queueSeries is one queue series of one replica's response; label is its
// class or reservation id where the kind has one.
type queueSeries struct {
	kind  exposition.QueueKind
	label string
	v     float64
}

// readQueue reads the queue series of one response, nil when it has none.
// The values are checked when folded (exposition.QueueFold), where both
// sources check them alike.
func readQueue(ss []Series, f *Families) []queueSeries {
	var out []queueSeries
	plain := func(k exposition.QueueKind, family, label int) {
		for i := range ss {
			if x := &ss[i]; x.family == family && x.hasValue {
				l := ""
				if label >= 0 {
					l = x.labels[label]
				}
				out = append(out, queueSeries{k, l, x.value})
			}
		}
	}
	plain(exposition.KindArrivals, f.queueArrivals, -1)
	// The run time as a histogram or summary family, and as the plain
	// _sum and _count counters a workload may expose instead. In the text
	// format a histogram's _sum and _count lines join its family (the
	// filter dropped its buckets, which are not read).
	for i := range ss {
		if x := &ss[i]; x.family == f.queueRunDuration && x.agg != aggNone {
			out = append(out, queueSeries{exposition.KindRunSeconds, "", x.sum}, queueSeries{exposition.KindRuns, "", x.count})
		}
	}
	plain(exposition.KindRunSeconds, f.queueRunSum, -1)
	plain(exposition.KindRuns, f.queueRunCount, -1)
	plain(exposition.KindReady, f.queueReady, labelClass)
	plain(exposition.KindRetrying, f.queueRetrying, labelClass)
	plain(exposition.KindDue, f.queueDue, -1)
	plain(exposition.KindBusy, f.queueBusy, -1)
	plain(exposition.KindReserved, f.queueReserved, -1)
	plain(exposition.KindReservationStart, f.reservationStart, labelReservation)
	plain(exposition.KindReservationEnd, f.reservationEnd, labelReservation)
	plain(exposition.KindReservationSlots, f.reservationSlots, labelReservation)
	return out
}

// FeedQueue adds the replica's queue series to the sample's fold. A
// reservation series without an id cannot be joined and is skipped, as a
// storage series without a tree is.
func (x *Sample) FeedQueue(f *exposition.QueueFold, replica string) {
	for _, s := range x.queue {
		if s.kind.Reservation() && s.label == "" {
			continue
		}
		f.Add(s.kind, replica, s.label, s.v)
	}
}
