package signal

import (
	"math"
	"slices"
	"time"
)

// MaxLeadWindow bounds LeadWindow, so the trend's history and its pairwise
// slopes live in fixed arrays and Compute does not allocate.
const MaxLeadWindow = 16

// surgePods is the HPA default scale-up policy's pod count: a stale
// saturated sample across n replicas asks for at least n + surgePods.
const surgePods = 4

// noiseScale turns a median absolute deviation into a standard deviation
// for normally distributed noise.
const noiseScale = 1.4826

// trend keeps the last samples of raw demand, each at the time its data
// was measured, and reads the slope and the noise of the newest window of
// them. Not safe for concurrent use;
// owned by one Computer.
type trend struct {
	window       int // samples the slope is read from
	significance float64
	n            int // samples held, <= MaxLeadWindow
	next         int // ring position of the next sample
	at           [MaxLeadWindow]time.Time
	y            [MaxLeadWindow]float64
	// scratch for the pairwise slopes and the differences.
	slopes [MaxLeadWindow * (MaxLeadWindow - 1) / 2]float64
	diffs  [MaxLeadWindow]float64
}

// add records raw demand measured at at. A sample measured no later than
// the newest held is the same data seen again (a source whose data has not
// moved on) and is not counted twice.
func (t *trend) add(at time.Time, raw float64) {
	if t.n > 0 && !at.After(t.at[(t.next+MaxLeadWindow-1)%MaxLeadWindow]) {
		return
	}
	t.at[t.next], t.y[t.next] = at, raw
	t.next = (t.next + 1) % MaxLeadWindow
	t.n = min(t.n+1, MaxLeadWindow)
}

// held returns the i-th held sample, oldest first.
func (t *trend) held(i int) (time.Time, float64) {
	j := (t.next - t.n + i + MaxLeadWindow) % MaxLeadWindow
	return t.at[j], t.y[j]
}

// noise is a robust standard deviation of the noise in the newest window
// samples, read from their successive differences about the median difference: a linear
// trend does not move it, a curving one barely does, a sudden step is one
// difference of many and is ignored, and each difference of two
// independent noisy samples is sqrt(2) noise widths wide. 0 with fewer
// than 3 samples.
func (t *trend) noise() float64 {
	if t.n < 3 {
		return 0
	}
	first := max(0, t.n-t.window)
	d := t.diffs[:t.n-1-first]
	_, prev := t.held(first)
	for i := first + 1; i < t.n; i++ {
		_, y := t.held(i)
		d[i-1-first], prev = y-prev, y
	}
	mid := median(d)
	for i := range d {
		d[i] = abs(d[i] - mid)
	}
	return noiseScale * median(d) / math.Sqrt2
}

// slope is the Theil-Sen slope of the newest window samples, in demand per
// second: the median of every pairwise slope, which ignores up to 29 % of
// outliers. z is the Mann-Kendall statistic of the same pairs: how many
// rise less how many fall, in standard deviations of that count for
// samples that are noise alone. It counts signs, not sizes, so neither
// the noise's size nor an outlier's moves it much. ok is false until a
// whole window is held.
func (t *trend) slope() (slope, z float64, ok bool) {
	if t.window < 3 || t.n < t.window {
		return 0, 0, false
	}
	var xs, ys [MaxLeadWindow]float64
	newest, _ := t.held(t.n - 1)
	for i := range t.window {
		at, y := t.held(t.n - t.window + i)
		xs[i], ys[i] = at.Sub(newest).Seconds(), y
	}
	slopes := t.slopes[:0]
	s := 0
	for i := range t.window {
		for j := i + 1; j < t.window; j++ {
			slopes = append(slopes, (ys[j]-ys[i])/(xs[j]-xs[i]))
			switch {
			case ys[j] > ys[i]:
				s++
			case ys[j] < ys[i]:
				s--
			}
		}
	}
	n := float64(t.window)
	sd := math.Sqrt(n * (n - 1) * (2*n + 5) / 18)
	// The continuity correction: S moves in steps of 2.
	return median(slopes), (float64(s) - 1) / sd, true
}

// lead is the demand to add ahead of the measurement over lag: the
// slope times the lag, when the slope is rising and the rise is
// significant (its Mann-Kendall z at least the significance); otherwise 0. A
// falling or flat trend never removes anything: the measurement stays the
// floor.
func (t *trend) lead(lag time.Duration) float64 {
	b, z, ok := t.slope()
	if !ok || lag <= 0 || !(b > 0) || z < t.significance {
		return 0
	}
	return b * lag.Seconds()
}

// median sorts v in place and returns its median.
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// surge is the saturation surge's state while samples stay saturated:
// the high-water mark of the value it publishes, the largest pool a
// saturated sample of the episode was measured across, and the factor
// the episode's demand is assumed to be above that pool. Not safe for
// concurrent use; owned by one Computer.
type surge struct {
	mark     float64   // 0 when no surge is on
	pool     int       // the largest saturated pool of the episode
	factor   float64   // the demand assumed, over the pool
	measured bool      // the working set, not the growth estimate, set the mark
	raised   time.Time // when the mark last rose
}

// surgeClear is how far below the surge level a sample must be to end a
// surge: the HPA's tolerance, 10 %. A replica held at saturation reads
// 0.97 or 0.999 as often as 1, and a surge that ended on such a sample
// would scale in and out again while the replicas cannot follow (a pool at
// its maximum, pods pending).
const surgeClear = 0.9

// surgeMaxFactor bounds the factor a surge assumes the demand is above its
// pool: four rounds of growth after the first doubling. The autoscaler's
// maximum bounds the pool in any case.
const surgeMaxFactor = 32

// observe folds one sample and returns the value the surge holds the
// signal at (0: none). A saturated sample only says "at least n replicas
// of work", so the surge estimates the demand it hides:
//
//   - the first saturated sample of an episode, across n replicas, asks
//     for 2n (n + surgePods when stale and that is more): the HPA's
//     default scale-up policies, which allow that much in one period;
//   - a later one measured across a larger pool, n' > n, is still
//     saturated: the pool grew by g = n' / n and the demand is still above
//     it, so the guess of how far above was short by at least g. The
//     factor is multiplied by g (the growth extrapolated once more, not a
//     fixed doubling) and the sample asks for n' x factor (n' + surgePods
//     when stale and that is more).
//
// Saturated samples of a pool no larger than the largest seen (the samples
// still in the pipeline when the surge began) change nothing: one noisy
// sample cannot ratchet a pool to its maximum.
//
// working is the demand an uncapped dimension measures beside the capped
// ones (pressure.ComputePressure.WorkingSetDemand: the working set, which
// keeps growing past the cap), in replicas at full pressure; 0 when the
// source has none. A saturated sample asks for at least working / target
// replicas at once, beside the growth estimate and never below it, within
// the same factor cap: where the source measures the hidden demand, the
// surge need not guess it.
//
// The mark only grows, and the first sample that is clearly not saturated
// (clear: below surgeClear of the level) ends the episode: once the
// measurement shows the demand below the cap, the demand itself is the
// signal. A sample just under the level neither ends the surge nor asks
// for more.
func (s *surge) observe(now time.Time, saturated, clear, stale bool, n int, target, working float64) float64 {
	if !saturated {
		if clear {
			*s = surge{}
			return 0
		}
		return s.mark
	}
	switch {
	case s.pool == 0:
		s.factor = 2
	case n > s.pool:
		s.factor = min(surgeMaxFactor, s.factor*float64(n)/float64(s.pool))
	}
	s.pool = max(s.pool, n)
	want := math.Ceil(float64(n) * s.factor)
	if stale {
		want = max(want, float64(n+surgePods))
	}
	measured := false
	if working > 0 {
		if asked := min(replicasAt(working, target), float64(n)*surgeMaxFactor); asked > want {
			want, measured = asked, true
		}
	}
	if want*target > s.mark {
		s.mark, s.measured, s.raised = want*target, measured, now
	}
	return s.mark
}

// workingSetDemand is the uncapped demand the surge reads
// (pressure.ComputePressure.WorkingSetDemand), 0 when the source has none.
func workingSetDemand(d *float64) float64 {
	if d == nil {
		return 0
	}
	return *d
}
