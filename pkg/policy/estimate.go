package policy

import (
	"math"
	"time"
)

// The estimators turn cumulative counters, as a scrape or Prometheus exposes
// them, into the queue policy's two averages: the arrival rate and the mean service
// time (docs/semantics.md, "The queue-pressure policy").
// They are fields of QueueState, updated by Evaluate only.

// increase is how much a counter grew from prev to cur. A counter that fell
// was restarted from zero (Prometheus's reset rule), so all of cur is new.
func increase(prev, cur float64) float64 {
	if cur >= prev {
		return cur - prev
	}
	return max(cur, 0)
}

// fold moves avg toward v by weight w, or adopts v when avg has no sample
// yet: a first sample is a better estimate than an arbitrary zero.
func fold(avg float64, seeded bool, v, w float64) float64 {
	if !seeded {
		return v
	}
	return avg + w*(v-avg)
}

// estimate folds one evaluation's counters into the averages. The arrival
// rate's time base is when the counters were read (obs.ObservedAt, now when
// zero), not when the decision is made: a slow sample must not stretch an
// interval it did not measure. A counter that is not a finite number, or a
// sample that comes out non-finite (a sum past MaxFloat64, Inf - Inf), is
// dropped, keeping the older reading: one such value would poison the
// average for good.
func (s *QueueState) estimate(alpha float64, obs QueueObservation, now time.Time) {
	// Service time needs no time base, so even the first evaluation counts:
	// the counters' whole history is runs that were observed.
	if finite(obs.Runs) && finite(obs.RunSeconds) {
		runs, secs := obs.Runs-s.runs, obs.RunSeconds-s.runSeconds
		if runs < 0 || secs < 0 {
			// Sum and count belong to one histogram and restart together.
			runs, secs = obs.Runs, obs.RunSeconds
		}
		if v := secs / runs; runs > 0 && secs >= 0 && finite(v) {
			// The interval's mean stands for each of its runs. Folding n
			// equal samples one by one is one fold of weight
			// 1-(1-alpha)^n, so the average weighs runs, not evaluations,
			// like a per-run EWMA.
			w := 1 - math.Pow(1-alpha, runs)
			s.service, s.serviceSeeded = fold(s.service, s.serviceSeeded, v, w), true
		}
		s.runs, s.runSeconds = obs.Runs, obs.RunSeconds
	}

	at := obs.ObservedAt
	if at.IsZero() {
		at = now
	}
	if !finite(obs.Arrivals) {
		return
	}
	if s.arrivalsRead {
		dt := at.Sub(s.arrivalsAt).Seconds()
		if dt <= 0 {
			// No time base: keep the older reading, so the next evaluation
			// measures over both intervals and no arrival is lost.
			return
		}
		if r := increase(s.arrivals, obs.Arrivals) / dt; finite(r) {
			s.rate, s.rateSeeded = fold(s.rate, s.rateSeeded, r, alpha), true
		}
	}
	s.arrivals, s.arrivalsAt, s.arrivalsRead = obs.Arrivals, at, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// serviceTime is the mean run time in seconds, or the default before any run.
func (s *QueueState) serviceTime(def time.Duration) float64 {
	if s.serviceSeeded {
		return s.service
	}
	return def.Seconds()
}
