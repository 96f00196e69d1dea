// Package seasonal is the seasonal forecast of pkg/signal's computer
// (docs/compensation.md, "The seasonal forecast"): a daily or weekly period
// found in the history of raw demand, and the demand one period ago at the
// time a replica asked for now will count, scaled to the current level.
// Memory keeps that history itself; Held reads it from a source that keeps
// it (pressure.SeasonSource). pkg/signal imports it, never the reverse.
package seasonal

import (
	"math"
	"time"
)

// The seasonal forecast's constants (docs/compensation.md, "The seasonal
// forecast").
const (
	// Bucket is the width of one bucket of the forecast's history: each
	// holds the mean raw demand of the samples whose data was measured in
	// it.
	Bucket = 5 * time.Minute
	// day and week are the periods the forecast looks for, in buckets.
	day  = int(24 * time.Hour / Bucket)
	week = 7 * day
	// Buckets is the history's length: eight days, so that a week's
	// period is read from a whole day of pairs.
	Buckets = week + day
	// minPairs is how many pairs of buckets one period apart the
	// history must hold before that period is tested: a whole day.
	minPairs = day
	// levelBuckets is how many of the newest buckets the current
	// level is read from (30 minutes).
	levelBuckets = 6
	// maxGap is the longest gap between two samples the history
	// interpolates across (an hour); a longer one leaves its buckets empty.
	maxGap = int(time.Hour / Bucket)
	// threshold is the autocorrelation a period must reach: the
	// real traces with a season reach 0.6 to 1 at the period they have
	// (NYC taxi 0.8 at a day, 0.9 to 1 at a week; NASA's four weeks 0.5 to
	// 0.64 at a day, 0.52 to 0.84 at a week), those without stay under 0.1
	// (an AWS load balancer's two weeks), and so does noise.
	threshold = 0.6
	// smoothBuckets is the half-width of the window one period ago
	// the forecast reads (6 buckets each side: 65 minutes): one bucket is
	// as noisy as the demand, and a forecast that follows that noise
	// reverses the count.
	smoothBuckets = 6
	// maxRatio bounds the current level over the level one period
	// ago, so a quiet hour one period ago does not multiply a forecast
	// without bound.
	maxRatio = 4
)

// Memory forecasts raw demand from its own history: a ring of Buckets
// bucket means (float32, NaN where no sample landed), the period it found
// in them (a day or a week, 0 when neither), and the
// bucket still filling. The ring grows as buckets close, from the first
// sample's bucket (origin) on, so a computer with the forecast off holds
// none and one that started an hour ago holds an hour's buckets: the full
// 9 KiB only after eight days. Not safe for concurrent use; owned by one
// signal.Computer.
type Memory struct {
	hist    []float32
	origin  int64 // the first sample's bucket: hist[0] until the ring wraps
	started bool
	newest  int64 // the newest bucket written to hist
	cur     int64 // the bucket filling
	sum     float64
	n       int
	last    time.Time // when the newest sample's data was measured
	period  int       // buckets; 0: no season found
}

// bucketOf is the number of the bucket t falls in.
func bucketOf(t time.Time) int64 {
	ns := t.UnixNano()
	b := ns / int64(Bucket)
	if ns < 0 && ns%int64(Bucket) != 0 {
		b--
	}
	return b
}

// index is bucket b's ring position, and whether the ring has grown to
// hold it. Buckets are written in order from origin on, so once a bucket
// Buckets after origin is written the ring is whole.
func (s *Memory) index(b int64) (int, bool) {
	d := b - s.origin
	if d < 0 {
		return 0, false
	}
	i := int(d % int64(Buckets))
	return i, i < len(s.hist)
}

// get is bucket b's mean as held, NaN when the ring never held it.
func (s *Memory) get(b int64) float64 {
	if i, ok := s.index(b); ok {
		return float64(s.hist[i])
	}
	return math.NaN()
}

// set writes bucket b's mean (b >= origin), growing the ring to hold it:
// doubling, up to Buckets exactly.
func (s *Memory) set(b int64, v float32) {
	i, ok := s.index(b)
	if !ok {
		if i >= cap(s.hist) {
			grown := make([]float32, len(s.hist), min(Buckets, max(i+1, 2*cap(s.hist), 16)))
			copy(grown, s.hist)
			s.hist = grown
		}
		for len(s.hist) <= i {
			s.hist = append(s.hist, float32(math.NaN()))
		}
	}
	s.hist[i] = v
}

// Observe folds raw demand measured at at. Data seen again (no later than
// the newest held) moves nothing.
func (s *Memory) Observe(at time.Time, raw float64) {
	if s.started && !at.After(s.last) {
		return
	}
	b := bucketOf(at)
	if !s.started {
		s.started, s.cur, s.newest, s.origin = true, b, b-1, b
	}
	if b > s.cur {
		s.close(b, raw)
	}
	s.sum += raw
	s.n++
	s.last = at
}

// close writes the filling bucket's mean and the buckets between it and b,
// the bucket of the new sample raw: interpolated when the gap is short,
// empty when it is long; then it tests the history for a season.
func (s *Memory) close(b int64, raw float64) {
	mean := s.sum / float64(max(s.n, 1))
	s.set(s.cur, float32(mean))
	gap := b - s.cur - 1
	for i := int64(1); i <= min(gap, int64(Buckets)); i++ {
		v := float32(math.NaN())
		if gap <= int64(maxGap) {
			v = float32(mean + (raw-mean)*float64(i)/float64(gap+1))
		}
		s.set(s.cur+i, v)
	}
	s.newest, s.cur, s.sum, s.n = b-1, b, 0, 0
	s.detect()
}

// at returns bucket b's mean: the filling bucket's so far, NaN when b is
// not held or empty.
func (s *Memory) at(b int64) float64 {
	switch {
	case b == s.cur && s.n > 0:
		return s.sum / float64(s.n)
	case b > s.newest || b <= s.newest-int64(Buckets):
		return math.NaN()
	}
	return s.get(b)
}

// detect sets the period: of a day and a week, the one whose
// autocorrelation over the history is the higher, when it reaches
// threshold; 0 otherwise.
func (s *Memory) detect() {
	s.period = 0
	best := threshold
	for _, p := range [...]int{day, week} {
		if r := s.autocorrelation(p); r >= best {
			s.period, best = p, r
		}
	}
}

// autocorrelation is the correlation of the held buckets with the buckets
// p before them (pairs where both are held), NaN with fewer than
// minPairs pairs.
func (s *Memory) autocorrelation(p int) float64 {
	var n, sx, sy, sxx, syy, sxy float64
	for b := s.newest; b > s.newest-int64(Buckets)+int64(p); b-- {
		x, y := s.get(b), s.get(b-int64(p))
		if math.IsNaN(x) || math.IsNaN(y) {
			continue
		}
		n++
		sx += x
		sy += y
		sxx += x * x
		syy += y * y
		sxy += x * y
	}
	if n < float64(minPairs) {
		return math.NaN()
	}
	cov := sxy - sx*sy/n
	vx, vy := sxx-sx*sx/n, syy-sy*sy/n
	if vx <= 0 || vy <= 0 {
		return 0
	}
	return cov / math.Sqrt(vx*vy)
}

// Forecast is the demand expected at the time the newest sample's data was
// measured plus lag (forecastFrom over the history held). 0 when no
// season was found or the history does not hold what it needs.
func (s *Memory) Forecast(lag time.Duration) float64 {
	if s.period == 0 || !s.started {
		return 0
	}
	return forecastFrom(s, s.cur, s.last, int64(s.period), lag)
}

// Period is the period found in the history: a day or a week, 0 when
// neither.
func (s *Memory) Period() time.Duration { return time.Duration(s.period) * Bucket }

// Len is how many buckets the history holds: 0 until the first bucket
// closes, Buckets once eight days have.
func (s *Memory) Len() int { return len(s.hist) }

// Empty is whether no sample was observed: the history of a computer with
// the forecast off, or of one that reads a source's history, stays so.
func (s *Memory) Empty() bool { return !s.started }

// buckets reads a history by bucket: the bucket's mean, NaN when it holds
// none.
type buckets interface {
	at(b int64) float64
}

// forecastFrom is the demand expected at last plus lag, of a history h
// whose newest bucket is cur and whose period is p buckets: the demand at
// that time one period ago, scaled by the current level over the level one
// period ago (the means of the newest levelBuckets buckets and of the
// same buckets one period before). 0 when h does not hold what it needs.
func forecastFrom(h buckets, cur int64, last time.Time, p int64, lag time.Duration) float64 {
	ahead := bucketOf(last.Add(lag)) - p
	var then float64
	var held int
	for b := ahead - smoothBuckets; b <= ahead+smoothBuckets; b++ {
		if v := h.at(b); !math.IsNaN(v) {
			then += v
			held++
		}
	}
	if held == 0 {
		return 0
	}
	then /= float64(held)
	var now, past float64
	var n int
	for b := cur; b > cur-levelBuckets; b-- {
		x, y := h.at(b), h.at(b-p)
		if math.IsNaN(x) || math.IsNaN(y) {
			continue
		}
		now += x
		past += y
		n++
	}
	if n == 0 {
		return 0
	}
	if past <= 0 {
		return 0
	}
	return then * min(now/past, maxRatio)
}
