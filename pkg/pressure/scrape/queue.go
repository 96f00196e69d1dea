package scrape

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// queueKind is which part of the queue contract a series is.
type queueKind int

const (
	qArrivals queueKind = iota
	qRunSeconds
	qRuns
	qReady
	qRetrying
	qDue
	qBusy
	qReserved
	qStart
	qEnd
	qSlots
)

// queueSeries is one queue series of one replica's response; label is its
// class or reservation id where the kind has one.
type queueSeries struct {
	kind  queueKind
	label string
	v     float64
}

// readQueue reads the queue series of one response, nil when it has none.
// The values are checked when folded (exposition.QueueFold), where both
// sources check them alike.
func readQueue(fams map[string]*dto.MetricFamily, n *exposition.Names) []queueSeries {
	var out []queueSeries
	add := func(k queueKind, label string, v float64) { out = append(out, queueSeries{k, label, v}) }
	plain := func(k queueKind, name, labelName string) {
		for _, m := range fams[name].GetMetric() {
			if v, ok := value(m); ok {
				add(k, label(m, labelName), v)
			}
		}
	}
	plain(qArrivals, n.QueueArrivals, "")
	// The run time as a histogram or summary family, and as the plain
	// _sum and _count counters a workload may expose instead. In the text
	// format a histogram's _sum and _count lines join its family (the
	// filter dropped its buckets, which are not read).
	for _, m := range fams[n.QueueRunDuration].GetMetric() {
		switch {
		case m.GetHistogram() != nil:
			h := m.GetHistogram()
			count := float64(h.GetSampleCount())
			if h.SampleCountFloat != nil {
				count = h.GetSampleCountFloat()
			}
			add(qRunSeconds, "", h.GetSampleSum())
			add(qRuns, "", count)
		case m.GetSummary() != nil:
			add(qRunSeconds, "", m.GetSummary().GetSampleSum())
			add(qRuns, "", float64(m.GetSummary().GetSampleCount()))
		}
	}
	plain(qRunSeconds, n.QueueRunDuration+exposition.SumSuffix, "")
	plain(qRuns, n.QueueRunDuration+exposition.CountSuffix, "")
	plain(qReady, n.QueueReady, exposition.LabelClass)
	plain(qRetrying, n.QueueRetrying, exposition.LabelClass)
	plain(qDue, n.QueueDue, "")
	plain(qBusy, n.QueueBusy, "")
	plain(qReserved, n.QueueReserved, "")
	plain(qStart, n.QueueReservationStart, exposition.LabelReservation)
	plain(qEnd, n.QueueReservationEnd, exposition.LabelReservation)
	plain(qSlots, n.QueueReservationSlots, exposition.LabelReservation)
	return out
}

// feedQueue adds one replica's queue series to the sample's fold. A
// reservation series without an id cannot be joined and is skipped, as a
// storage series without a tree is.
func feedQueue(f *exposition.QueueFold, replica string, series []queueSeries) {
	for _, s := range series {
		switch s.kind {
		case qArrivals:
			f.Arrivals(replica, s.v)
		case qRunSeconds:
			f.RunSeconds(replica, s.v)
		case qRuns:
			f.Runs(replica, s.v)
		case qReady:
			f.Ready(s.label, s.v)
		case qRetrying:
			f.Retrying(s.label, s.v)
		case qDue:
			f.Due(s.v)
		case qBusy:
			f.Busy(s.v)
		case qReserved:
			f.Reserved(s.v)
		case qStart:
			if s.label != "" {
				f.ReservationStart(s.label, s.v)
			}
		case qEnd:
			if s.label != "" {
				f.ReservationEnd(s.label, s.v)
			}
		case qSlots:
			if s.label != "" {
				f.ReservationSlots(s.label, s.v)
			}
		}
	}
}
