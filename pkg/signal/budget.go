package signal

import (
	"math"
	"time"
)

// The shortfall budget's constants (docs/compensation.md, "The budgets").
const (
	// budgetLevelSamples is how many of the newest raw demands the level is
	// the mean of: enough to average one noisy sample out, few enough to
	// follow a rise within a sample or two.
	budgetLevelSamples = 3
	// budgetSpreadSamples is how many the spread is the standard deviation
	// of.
	budgetSpreadSamples = 48
	// budgetStartWidths is the headroom a new computer starts with, in
	// widths of the spread: about a 2 % upper tail for normal noise.
	budgetStartWidths = 2.0
	// budgetMaxWidths bounds the headroom.
	budgetMaxWidths = 10.0
	// budgetStep is how far one sample moves the headroom, in widths, once
	// it has settled: a short sample raises it by step x (1 - budget), a
	// covered one lowers it by step x budget, so it settles where a
	// budget's share of the samples are short. The step starts larger,
	// 1 / sqrt(samples seen), so a new target finds its headroom within
	// its first few hundred samples.
	budgetStep = 0.1
	// budgetMinSpread is the smallest spread, relative to the level: a
	// perfectly flat history still leaves a little headroom to move, and a
	// workload idle at zero for the whole history publishes zero, so KEDA
	// can deactivate it.
	budgetMinSpread = 0.05
)

// budget provisions for a shortfall budget. It keeps the newest raw
// demands and provisions for their level (the mean of the newest
// budgetLevelSamples) plus a headroom of k widths of their spread over the
// lag (how far the demand moves in one lag, read from the newest
// budgetSpreadSamples). k is fed back
// from the samples themselves: a sample whose dominant pressure is above
// the autoscaler's target saw the pool short, so each short sample raises
// k and each covered one lowers it, in the proportion that settles k
// where a budget's share of the samples are short, whatever the lag, the
// noise or the autoscaler between the signal and the pool. A sample of a
// pool in transition (asks.inTransit) moves k neither way: the pool had
// not become what the headroom asked for. Not safe for concurrent use;
// owned by one Computer.
type budget struct {
	fraction float64 // the shortfall budget, in (0, 1)
	k        float64 // the headroom, in widths of the spread
	n, next  int
	seen     int
	spreads  int                        // samples the typical spread has read
	at       [budgetSpreadSamples]int64 // unix nanoseconds: a third of a time.Time
	width    float64                    // the headroom last provisioned, above the level
	typical  float64                    // the spread's long-run mean, 0 until one is read
	y        [budgetSpreadSamples]float64
	bound    [budgetSpreadSamples]bool // the demand was at least y: saturated or in transit
}

func newBudget(fraction float64) budget {
	return budget{fraction: fraction, k: budgetStartWidths}
}

// observe folds raw demand measured at at, whether that sample saw the
// pool short, was saturated, and read a pool in transition; it returns the value to provision for when the data is lag
// old by the time a replica asked for now counts. Data seen again (no
// later than the newest held) moves nothing.
func (b *budget) observe(at time.Time, raw float64, short, capped, transit bool, lag time.Duration) float64 {
	fresh := b.n == 0 || at.UnixNano() > b.at[(b.next-1+budgetSpreadSamples)%budgetSpreadSamples]
	if fresh {
		// A saturated sample's demand is a lower bound, and so may be one
		// of a pool in transition (the load spread onto replicas the
		// source had not read yet).
		b.at[b.next], b.y[b.next], b.bound[b.next] = at.UnixNano(), raw, capped || transit
		b.next = (b.next + 1) % budgetSpreadSamples
		b.n = min(b.n+1, budgetSpreadSamples)
		b.seen++
		step := max(budgetStep, 1/math.Sqrt(float64(b.seen)))
		switch {
		case transit:
			// The pool had not caught up with what the signal asked for:
			// short or not, the sample is the autoscaler's delivery, not
			// the headroom's doing (asks.inTransit).
		case short:
			b.k += step * (1 - b.fraction)
		default:
			b.k -= step * b.fraction
		}
		b.k = min(budgetMaxWidths, max(0, b.k))
	}
	level, spread := b.levelAndSpread(lag)
	spread = max(spread, budgetMinSpread*level)
	if fresh && spread > 0 {
		// A running mean, then the feedback's own time scale: the
		// typical spread moves no faster than k, which is read against it.
		b.spreads++
		b.typical += max(1/float64(b.spreads), budgetStep*b.fraction) * (spread - b.typical)
	}
	b.width = b.widths(spread) * spread
	return level + b.width
}

// widths is the headroom for a spread, in its widths: k at the typical
// spread or wider, more where the spread is narrower. Each width of
// headroom costs spread's worth of demand and saves the samples in the
// demand's tail beyond it; for a normal tail the cheapest headroom that
// keeps a given share of the samples short spends w widths with
// w^2 = k^2 - 2 ln(spread / typical), more widths where a width is cheap.
// Where the spread is wider than typical it is most often the demand
// moving (a step, a burst), which a normal tail understates, so there the
// headroom stays at k widths (docs/compensation.md, "The budgets").
func (b *budget) widths(spread float64) float64 {
	if b.typical <= 0 || spread <= 0 {
		return b.k
	}
	return math.Sqrt(b.k*b.k - 2*math.Log(min(1, spread/b.typical)))
}

// index is the ring position of the i-th held sample, oldest first.
func (b *budget) index(i int) int {
	return (b.next - b.n + i + budgetSpreadSamples) % budgetSpreadSamples
}

// held returns the i-th held sample, oldest first.
func (b *budget) held(i int) (time.Time, float64) {
	j := b.index(i)
	return time.Unix(0, b.at[j]), b.y[j]
}

// levelAndSpread returns the mean of the newest budgetLevelSamples held
// and the spread of the demand over lag: the root mean square of the
// changes between held samples lag apart, over sqrt(2) — the standard
// deviation of the demand's noise when lag is a sample apart, and more as
// the lag lets a trend or a wave move it; a change from a saturated sample
// is left out (the demand was already above what it said). It is 0 when
// the lag is 0 or no two held samples are lag apart: fresh data needs no
// headroom.
func (b *budget) levelAndSpread(lag time.Duration) (level, spread float64) {
	var recent float64
	for i := b.n - min(b.n, budgetLevelSamples); i < b.n; i++ {
		_, y := b.held(i)
		recent += y
	}
	level = recent / float64(min(b.n, budgetLevelSamples))
	if lag <= 0 {
		return level, 0
	}
	var sumSq float64
	pairs, j := 0, 0
	for i := 1; i < b.n; i++ {
		at, y := b.held(i)
		// j: the newest sample at least lag before sample i.
		for j+1 < i {
			next, _ := b.held(j + 1)
			if at.Sub(next) < lag {
				break
			}
			j++
		}
		from, x := b.held(j)
		if at.Sub(from) < lag {
			continue
		}
		if b.bound[b.index(j)] {
			// A change from a lower bound is the cap's or the pool's: the
			// demand was already higher than the sample could say.
			continue
		}
		sumSq += (y - x) * (y - x)
		pairs++
	}
	if pairs == 0 {
		return level, 0
	}
	return level, math.Sqrt(sumSq / float64(pairs) / 2)
}
