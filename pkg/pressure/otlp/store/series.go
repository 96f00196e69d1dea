package store

import (
	"math"
	"slices"
)

// Kind is how a series is read.
type Kind int

const (
	// Gauge is a current value: an OTLP gauge, or a sum that is not
	// monotonic (an UpDownCounter), which says the same thing.
	Gauge Kind = iota
	// Counter is a monotonic sum, kept as a cumulative value that never
	// falls: a reset adds what was counted before it to an offset, and
	// delta points are added up.
	Counter
	// Histogram is an explicit-bucket histogram, or a summary (its sum and
	// count, no buckets), kept cumulative like a Counter.
	Histogram
)

func (k Kind) String() string {
	switch k {
	case Gauge:
		return "gauge"
	case Counter:
		return "counter"
	default:
		return "histogram"
	}
}

// sample is one kept point of a series. For a Counter v is the cumulative
// count, reset-adjusted; for a Histogram v is the sum, count the count and
// buckets the per-bucket counts, all reset-adjusted.
type sample struct {
	t       int64 // the point's time as stored, Unix nanoseconds
	v       float64
	count   float64
	buckets []float64
}

// series is one metric series of one replica: a metric name and its point
// attributes. Gauges keep their newest point; counters and histograms keep
// a short history to rate over a window. The history keeps a point at
// most every resolution, except the newest, which is always the last one
// received (see add), so a replica pushing every second does not push the
// window out of the history.
type series struct {
	metric string
	labels []Label
	kind   Kind

	hist []sample // oldest first; hist[len-1] is the newest point

	// What the last raw point said, to detect resets, duplicates and
	// overlapping deltas: lastT is its time as stored, lastOwn its own
	// (they differ for a point retimed to its receive time).
	lastT, lastOwn, start int64
	raw                   sample // the last raw cumulative values (delta: the running total)
	offset                sample // added to raw: what was counted before resets
	bounds                []float64

	// firstStart is the first point's start time when it is before the
	// point: the series counted from 0 then, which a window that reaches
	// back to it reads as its base. evicted says the first point has left
	// the history (a base then is a kept point).
	firstStart int64
	evicted    bool

	cost    int64 // bytes reserved for this series in the memory account
	touched int64 // when the store last wrote it, store clock, Unix nanoseconds
}

// Label is one point attribute, its value as a string.
type Label struct{ Name, Value string }

// add appends p to the history, thinning by resolution, and keeps at most
// limit points.
func (s *series) add(p sample, resolution int64, limit int) {
	n := len(s.hist)
	if s.kind == Gauge || limit <= 1 {
		if n == 0 {
			s.hist = append(s.hist, p)
		} else {
			s.hist[0] = p
		}
		return
	}
	// The newest point replaces the previous newest while that one is
	// within resolution of the point before it: spacing stays at least
	// resolution, and the newest is always exact.
	if n >= 2 && p.t-s.hist[n-2].t < resolution {
		s.hist[n-1] = p
		return
	}
	if n == limit {
		s.evicted = true
		copy(s.hist, s.hist[1:])
		s.hist[n-1] = p
		return
	}
	s.hist = append(s.hist, p)
}

func (s *series) newest() sample { return s.hist[len(s.hist)-1] }

// adjusted is the raw values plus the offset of earlier resets.
func (s *series) adjusted(t int64) sample {
	p := sample{t: t, v: s.raw.v + s.offset.v, count: s.raw.count + s.offset.count}
	if len(s.raw.buckets) > 0 {
		p.buckets = make([]float64, len(s.raw.buckets))
		for i, c := range s.raw.buckets {
			p.buckets[i] = c + s.offset.buckets[i]
		}
	}
	return p
}

// reset moves what was counted so far into the offset: the counter
// restarted, and counts on from its new raw value.
func (s *series) reset() {
	s.offset.v += s.raw.v
	s.offset.count += s.raw.count
	for i := range s.offset.buckets {
		s.offset.buckets[i] += s.raw.buckets[i]
	}
}

// base is the history point a window rate starts from: the newest one at
// or before newest-window, or the oldest kept when the history is shorter
// than the window. While the first point is kept, a zero at its start time
// comes before it: OTLP's cumulative and delta points count from their
// start, so a series pushed since its start has a rate from its first
// point.
func (s *series) base(window int64) sample {
	end := s.newest().t - window
	b := s.hist[0]
	if !s.evicted && s.firstStart > 0 {
		b = sample{t: s.firstStart, buckets: make([]float64, len(b.buckets))}
	}
	for _, p := range s.hist {
		if p.t > end {
			break
		}
		b = p
	}
	return b
}

// Quantile estimates the q-quantile (0..1) from per-bucket counts and
// their upper bounds (len(counts) == len(bounds)+1, the last bucket open),
// interpolating linearly within the bucket as Prometheus'
// histogram_quantile does: the first bucket's lower edge is 0 when its
// bound is positive, and a quantile in the open last bucket is the largest
// bound. false when there are no observations.
func Quantile(q float64, bounds, counts []float64) (float64, bool) {
	if len(counts) == 0 || len(counts) != len(bounds)+1 || math.IsNaN(q) {
		return 0, false
	}
	var total float64
	for _, c := range counts {
		total += c
	}
	if !(total > 0) {
		return 0, false
	}
	q = min(max(q, 0), 1)
	rank := q * total
	var seen float64
	for i, c := range counts {
		if seen+c < rank || c == 0 {
			seen += c
			continue
		}
		if i == len(bounds) {
			return bounds[len(bounds)-1], len(bounds) > 0
		}
		lower := 0.0
		if i > 0 {
			lower = bounds[i-1]
		} else if bounds[0] <= 0 {
			return bounds[0], true
		}
		return lower + (bounds[i]-lower)*(rank-seen)/c, true
	}
	if len(bounds) == 0 {
		return 0, false
	}
	return bounds[len(bounds)-1], true
}

// sameBounds says two histogram points bucket alike.
func sameBounds(a, b []float64) bool { return slices.Equal(a, b) }
