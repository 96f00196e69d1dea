package signal

import (
	"math"
	"slices"
	"time"
)

// maxLeadWindow bounds LeadWindow, so the trend's history and its pairwise
// slopes live in fixed arrays and Compute does not allocate.
const maxLeadWindow = 16

// surgePods is the HPA default scale-up policy's pod count: a stale
// saturated sample across n replicas asks for at least n + surgePods.
const surgePods = 4

// noiseScale turns a median absolute deviation into a standard deviation
// for normally distributed noise.
const noiseScale = 1.4826

// trend keeps the last samples of raw demand, each at the time its data was
// measured, and forecasts from them. Not safe for concurrent use; owned by
// one Computer.
type trend struct {
	window       int
	significance float64
	n            int // samples held, <= window
	next         int // ring position of the next sample
	at           [maxLeadWindow]time.Time
	y            [maxLeadWindow]float64
	// scratch for the pairwise slopes and the residuals.
	slopes [maxLeadWindow * (maxLeadWindow - 1) / 2]float64
	resid  [maxLeadWindow]float64
}

// add records raw demand measured at at. A sample measured no later than
// the newest held is the same data seen again (a source whose data has not
// moved on) and is not counted twice.
func (t *trend) add(at time.Time, raw float64) {
	if t.window < 2 {
		return
	}
	if t.n > 0 && !at.After(t.at[(t.next+t.window-1)%t.window]) {
		return
	}
	t.at[t.next], t.y[t.next] = at, raw
	t.next = (t.next + 1) % t.window
	t.n = min(t.n+1, t.window)
}

// fit reads the held samples' trend: the Theil-Sen slope (the median of
// every pairwise slope, which ignores up to 29 % of outliers), in demand
// per second, the noise about it (a robust standard deviation), and the
// trend's rise over the window. ok is false with
// fewer than 3 samples.
func (t *trend) fit() (slope, noise, rise float64, ok bool) {
	if t.n < 3 {
		return 0, 0, 0, false
	}
	// Times in seconds before the newest sample, oldest first.
	first := (t.next - t.n + t.window) % t.window
	newest := t.at[(t.next+t.window-1)%t.window]
	var xs, ys [maxLeadWindow]float64
	for i := range t.n {
		j := (first + i) % t.window
		xs[i], ys[i] = t.at[j].Sub(newest).Seconds(), t.y[j]
	}
	slopes := t.slopes[:0]
	for i := range t.n {
		for j := i + 1; j < t.n; j++ {
			slopes = append(slopes, (ys[j]-ys[i])/(xs[j]-xs[i]))
		}
	}
	b := median(slopes)
	// The noise is read from successive differences about their median,
	// which a linear trend does not move and a curving one barely does:
	// each difference of two independent noisy samples is sqrt(2) noise
	// widths wide.
	resid := t.resid[:t.n-1]
	for i := range resid {
		resid[i] = ys[i+1] - ys[i]
	}
	mid := median(resid)
	for i := range resid {
		resid[i] = abs(resid[i] - mid)
	}
	noise = noiseScale * median(resid) / math.Sqrt2
	return b, noise, b * (xs[t.n-1] - xs[0]), true
}

// lead is the demand to add ahead of the measurement over lag: the trend's
// slope times the lag, when the slope is rising and its rise over the
// window stands out of the window's noise by the significance; otherwise
// 0. A falling or flat trend never removes anything: the measurement
// stays the floor.
func (t *trend) lead(slope, noise, rise float64, lag time.Duration) float64 {
	if lag <= 0 || !(slope > 0) || rise <= t.significance*noise {
		return 0
	}
	return slope * lag.Seconds()
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

// surge is the saturation surge's state: the high-water mark of the value
// it publishes while samples stay saturated. Not safe for concurrent use;
// owned by one Computer.
type surge struct {
	mark float64 // 0 when no surge is on
}

// observe folds one sample and returns the value the surge holds the
// signal at (0: none). A saturated sample across n replicas asks for 2n
// replicas (n + surgePods when stale and that is more) at target; the mark
// only grows, so it follows the pool as it climbs, and the first sample
// that is not saturated ends it: once the measurement shows the demand
// below the cap, the demand itself is the signal. The mark depends on the
// replicas the sample was measured across, not on the pool asked for, so
// repeated saturated samples of the same pool keep it where it is: one
// noisy sample cannot ratchet a pool to its maximum.
func (s *surge) observe(saturated, stale bool, n int, target float64) float64 {
	if !saturated {
		s.mark = 0
		return 0
	}
	want := 2 * n
	if stale {
		want = max(want, n+surgePods)
	}
	s.mark = max(s.mark, float64(want)*target)
	return s.mark
}
