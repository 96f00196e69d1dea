package scrape

import (
	dto "github.com/prometheus/client_model/go"

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
func readQueue(fams map[string]*dto.MetricFamily, n *exposition.Names) []queueSeries {
	var out []queueSeries
	add := func(k exposition.QueueKind, label string, v float64) { out = append(out, queueSeries{k, label, v}) }
	plain := func(k exposition.QueueKind, name, labelName string) {
		for _, m := range fams[name].GetMetric() {
			if v, ok := value(m); ok {
				add(k, label(m, labelName), v)
			}
		}
	}
	plain(exposition.KindArrivals, n.QueueArrivals, "")
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
			add(exposition.KindRunSeconds, "", h.GetSampleSum())
			add(exposition.KindRuns, "", count)
		case m.GetSummary() != nil:
			add(exposition.KindRunSeconds, "", m.GetSummary().GetSampleSum())
			add(exposition.KindRuns, "", float64(m.GetSummary().GetSampleCount()))
		}
	}
	plain(exposition.KindRunSeconds, n.QueueRunDuration+exposition.SumSuffix, "")
	plain(exposition.KindRuns, n.QueueRunDuration+exposition.CountSuffix, "")
	plain(exposition.KindReady, n.QueueReady, exposition.LabelClass)
	plain(exposition.KindRetrying, n.QueueRetrying, exposition.LabelClass)
	plain(exposition.KindDue, n.QueueDue, "")
	plain(exposition.KindBusy, n.QueueBusy, "")
	plain(exposition.KindReserved, n.QueueReserved, "")
	plain(exposition.KindReservationStart, n.QueueReservationStart, exposition.LabelReservation)
	plain(exposition.KindReservationEnd, n.QueueReservationEnd, exposition.LabelReservation)
	plain(exposition.KindReservationSlots, n.QueueReservationSlots, exposition.LabelReservation)
	return out
}

// feedQueue adds one replica's queue series to the sample's fold. A
// reservation series without an id cannot be joined and is skipped, as a
// storage series without a tree is.
func feedQueue(f *exposition.QueueFold, replica string, series []queueSeries) {
	for _, s := range series {
		if s.kind.Reservation() && s.label == "" {
			continue
		}
		f.Add(s.kind, replica, s.label, s.v)
	}
}
