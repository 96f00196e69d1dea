package promsource

import (
	"time"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// foldQueue reads the queue queries with the scrape source's rules
// (exposition.QueueFold), so a workload read both ways has one queue. Queue
// is nil when no queue query returned a series.
//
// The counters are kept per replica label value, which is why their
// default queries keep the series raw rather than sum() them: a plain sum
// falls whenever a replica goes away (a pod scaled in, a missed scrape gone
// stale), and the queue policy reads a fall as a restart and the whole sum
// as new work. Held per replica (exposition.CounterSum), the sum falls only
// on a real restart and then by that replica alone. A counter series
// without the replica label (a query that sums itself) is one
// workload-wide replica, with the plain sum's weakness. The replicas query
// does not filter the queue: its counters and gauges are the workload's.
func (s *Source) foldQueue(res *[numDimensions]result, at time.Time) (*pressure.QueueObservation, error) {
	var f exposition.QueueFold
	for d := dimArrivals; d <= dimReservationSlots; d++ {
		for _, smp := range res[d].vec {
			if err := s.applyQueue(&f, d, smp); err != nil {
				return nil, err
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return f.Observation(&s.counters, at), nil
}

func (s *Source) applyQueue(f *exposition.QueueFold, d dimension, smp *model.Sample) error {
	kind := queueKinds[d]
	label := string(smp.Metric[exposition.LabelClass])
	if kind.Reservation() {
		label = string(smp.Metric[exposition.LabelReservation])
		if label == "" {
			return s.errorf(d, "series %s has no %s label: return one series per reservation, for example max by (%s) (...)",
				smp.Metric, exposition.LabelReservation, exposition.LabelReservation)
		}
	}
	f.Add(kind, string(smp.Metric[s.label]), label, float64(smp.Value))
	return nil
}

// queueKinds is the queue series kind of each queue dimension.
var queueKinds = [numDimensions]exposition.QueueKind{
	dimArrivals:         exposition.KindArrivals,
	dimRunSeconds:       exposition.KindRunSeconds,
	dimRuns:             exposition.KindRuns,
	dimReady:            exposition.KindReady,
	dimRetrying:         exposition.KindRetrying,
	dimDue:              exposition.KindDue,
	dimBusy:             exposition.KindBusy,
	dimReserved:         exposition.KindReserved,
	dimReservationStart: exposition.KindReservationStart,
	dimReservationEnd:   exposition.KindReservationEnd,
	dimReservationSlots: exposition.KindReservationSlots,
}
