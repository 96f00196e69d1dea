package signal

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

func budgeted(t testing.TB) Options {
	t.Helper()
	o, err := ProfileOptions(ProfileBudgeted)
	if err != nil {
		t.Fatal(err)
	}
	o.SurgeTarget = 0.7
	return o
}

// poolLoop closes the loop a sample at a time: demand[i] (in replicas at
// 100 %) is measured across the pool in place delay samples earlier, and
// the pool becomes what KEDA asks for at target 0.7. It returns the share
// of samples whose pool was short (the demand above 0.7 per replica) and
// the replica-samples provisioned.
func poolLoop(c *Computer, demand []float64, delay int) (shortShare float64, total int) {
	pools := make([]int, len(demand))
	pool, short := 1, 0
	for i, d := range demand {
		pools[i] = pool
		if d > 0.7*float64(pool) {
			short++
		}
		j := max(0, i-delay)
		n := pools[j]
		now := at(float64(15 * i))
		in := Input{Compute: cp(0, min(1, demand[j]/float64(n)), 0, n), MeasuredAt: at(float64(15 * j))}
		pool = max(1, int(math.Ceil(c.Compute(now, in).ScaleValue/0.7-1e-9)))
		total += pool
	}
	return float64(short) / float64(len(demand)), total
}

// noisyDemand is a level of 10 replicas with uniform noise of +-30 %, and
// a slow wave.
func noisyDemand(n int, seed int64) []float64 {
	r := &rng{s: seed}
	d := make([]float64, n)
	for i := range d {
		wave := 1 + 0.3*math.Sin(float64(i)/200)
		d[i] = 10 * wave * (0.7 + 0.6*r.next())
	}
	return d
}

// TestShortfallBudgetSettlesAtTheBudget: on noisy demand three samples
// stale, the share of samples that see the pool short stays within the
// budget and near it (above a third of it; the feedback comes down from a
// short sample slowly, budgetStep x budget a sample, so it settles a
// little under), where the responsive profile, which
// provisions for the demand it saw, is short far more often; and a larger
// budget costs fewer replicas. The churn budget is off: its hold covers
// this noise on its own.
func TestShortfallBudgetSettlesAtTheBudget(t *testing.T) {
	demand := noisyDemand(4000, 7)
	for _, b := range []float64{0.025, 0.05, 0.1} {
		o := budgeted(t)
		o.ShortfallBudget, o.ScaleInHold = b, 0
		share, _ := poolLoop(NewComputer(o), demand, 3)
		t.Logf("budget %v: %.2f %% of samples short", b, 100*share)
		if share > b || share < b/3 {
			t.Errorf("budget %v: %.2f %% of samples short", b, 100*share)
		}
	}
	resp, _ := poolLoop(NewComputer(responsive(t)), demand, 3)
	if resp < 0.1 {
		t.Errorf("responsive: %.2f %% short; the test's demand is not hard enough", 100*resp)
	}
	tight, loose := budgeted(t), budgeted(t)
	tight.ShortfallBudget, loose.ShortfallBudget = 0.025, 0.1
	tight.ScaleInHold, loose.ScaleInHold = 0, 0
	_, tightTotal := poolLoop(NewComputer(tight), demand, 3)
	_, looseTotal := poolLoop(NewComputer(loose), demand, 3)
	if looseTotal >= tightTotal {
		t.Errorf("budget 10 %%: %d replica-samples, budget 2.5 %%: %d; a larger budget should cost less", looseTotal, tightTotal)
	}
}

// TestShortfallBudgetReadsEachMeasurementOnce: a sample whose data was
// seen before (a source that has not moved on) moves neither the history
// nor the feedback.
func TestShortfallBudgetReadsEachMeasurementOnce(t *testing.T) {
	b := newBudget(0.025)
	m := at(0)
	first := b.observe(m, 5, true, false, false, 30*time.Second)
	k := b.k
	for range 10 {
		if got := b.observe(m, 5, true, false, false, 30*time.Second); got != first || b.k != k || b.n != 1 {
			t.Fatalf("repeated data: provision %v (was %v), k %v (was %v), held %d", got, first, b.k, k, b.n)
		}
	}
}

// TestShortfallBudgetHeadroomGrowsWithTheLag: the spread is how far the
// demand moves in one lag, so on a steady ramp a longer lag asks for more
// headroom.
func TestShortfallBudgetHeadroomGrowsWithTheLag(t *testing.T) {
	b := newBudget(0.025)
	for i := range 40 {
		b.observe(at(float64(15*i)), float64(i), false, false, false, 0)
	}
	level, short := b.levelAndSpread(15 * time.Second)
	_, long := b.levelAndSpread(60 * time.Second)
	if level != 38 || !(long > 3*short) {
		t.Errorf("level %v, spread over 15 s %v, over 60 s %v; want 38 and the longer lag's spread about 4x", level, short, long)
	}
	if _, none := b.levelAndSpread(0); none != 0 {
		t.Errorf("spread with no lag %v, want 0", none)
	}
}

// The hold's ring grows to what its window needs and no further, and
// answers as one that kept every sample would: the highest value of the
// window among the newest MaxScaleInHoldSamples, whatever the window, the
// interval and the growth steps in between.
func TestHoldRingGrowsToItsWindow(t *testing.T) {
	for _, c := range []struct {
		window, interval time.Duration
		most             int // the ring's largest capacity
	}{
		{time.Minute, 15 * time.Second, 8},
		{10 * time.Minute, 30 * time.Second, 32},
		{time.Hour, 5 * time.Second, MaxScaleInHoldSamples},
		{time.Minute, 5 * time.Minute, 4},
	} {
		h := hold{window: c.window}
		var all []heldValue
		for i := range 600 {
			now := at(0).Add(time.Duration(i) * c.interval)
			v := float64((i*7919)%101) / 10
			all = append(all, heldValue{at: now.UnixNano(), v: v})
			want := v
			for k := len(all) - 2; k >= max(0, len(all)-MaxScaleInHoldSamples); k-- {
				if time.Duration(now.UnixNano()-all[k].at) < c.window {
					want = max(want, all[k].v)
				}
			}
			if got := h.observe(v, now, 0); got != want {
				t.Fatalf("window %v every %v, sample %d: %v, want %v", c.window, c.interval, i, got, want)
			}
		}
		if len(h.ring) > c.most {
			t.Errorf("window %v every %v: ring of %d samples, want at most %d", c.window, c.interval, len(h.ring), c.most)
		}
	}
}

// TestChurnBudgetHoldsAFallNotARise: a rise is published at once; a fall
// only once the lower level has lasted the whole hold.
func TestChurnBudgetHoldsAFallNotARise(t *testing.T) {
	h := hold{window: time.Minute}
	steps := []struct {
		s    float64
		v    float64
		want float64
	}{
		{0, 5, 5}, {15, 8, 8}, {30, 3, 8}, {45, 3, 8}, {60, 3, 8},
		{75, 3, 3}, // the 8 was asked 60 s ago: the window has passed
		{90, 9, 9}, // a rise, at once
	}
	for _, s := range steps {
		if got := h.observe(s.v, at(s.s), 0); got != s.want {
			t.Errorf("at %vs asked %v: published %v, want %v", s.s, s.v, got, s.want)
		}
	}
}

// TestChurnBudgetPricesAFall: with a price, a surplus of S replicas over
// what the samples since asked for is dropped once it has cost the price
// beyond its start-up: price / S + start-up after the first sample that
// asked for less, at most the whole window after the last that asked for
// more.
func TestChurnBudgetPricesAFall(t *testing.T) {
	for _, c := range []struct {
		name    string
		from    float64 // the value held, at target 1: replicas
		startup time.Duration
		want    float64 // seconds until the fall to 2 replicas is published
	}{
		{"a surplus of 8 replicas", 10, 0, 15 + 75},
		{"of 2", 4, 0, 300},
		{"of 1: the whole window, the price would be 600 s", 3, 0, 300},
		{"of 8, each a start-up of 30 s", 10, 30 * time.Second, 15 + 75 + 30},
	} {
		h := hold{window: 5 * time.Minute, price: 600, target: 1}
		h.observe(c.from, at(0), c.startup)
		got := -1.0
		for s := 15.0; s <= 600; s += 15 {
			if h.observe(2, at(s), c.startup) == 2 {
				got = s
				break
			}
		}
		if got != c.want {
			t.Errorf("%s: the fall published after %vs, want %vs", c.name, got, c.want)
		}
	}
}

// TestChurnBudgetDropsToWhatTheStretchAskedFor: a fall is dropped to the
// most any sample of the stretch that paid for it asked, not below: the
// noise within the stretch stays covered.
func TestChurnBudgetDropsToWhatTheStretchAskedFor(t *testing.T) {
	h := hold{window: 5 * time.Minute, price: 600, target: 1}
	h.observe(20, at(0), 0)
	asks := []float64{4, 6, 5, 4, 6, 5, 4}
	var got []float64
	for i, v := range asks {
		got = append(got, h.observe(v, at(float64(15*(i+1))), 0))
	}
	// 14 replicas over 6 pay 600 replica-seconds in 45 s (the third
	// sample back, at 15 s, is the oldest of the stretch).
	want := []float64{20, 20, 20, 6, 6, 6, 6}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("published %v, want %v", got, want)
		}
	}
}

// TestChurnBudgetLearnsWhetherDropsLast: where the latest priced drops
// were undone within the window (the demand came back above the level
// dropped to), a surplus is kept twice its break-even; where they
// lasted, half of it.
func TestChurnBudgetLearnsWhetherDropsLast(t *testing.T) {
	// fallAfter holds 10 replicas, then asks for 2 until the fall is
	// published; it returns how long after the first ask for 2.
	fallAfter := func(h *hold, from float64) float64 {
		h.observe(10, at(from), 0)
		for s := from + 15; s < from+600; s += 15 {
			if h.observe(2, at(s), 0) == 2 {
				return s - from - 15
			}
		}
		return -1
	}
	undone := hold{window: 5 * time.Minute, price: 600, target: 1}
	if got := fallAfter(&undone, 0); got != 75 {
		t.Fatalf("no drop seen yet: the fall after %vs, want 75 s (600 / 8)", got)
	}
	// The demand comes back within the window: the drop was undone.
	if got := fallAfter(&undone, 100); got != 150 {
		t.Errorf("after an undone drop: the fall after %vs, want 150 s", got)
	}
	lasting := hold{window: 5 * time.Minute, price: 600, target: 1}
	fallAfter(&lasting, 0)
	// Nothing asks for more for a whole window after the drop: it lasted.
	for s := 90.0; s <= 420; s += 15 {
		lasting.observe(2, at(s), 0)
	}
	if got := fallAfter(&lasting, 435); got != 45 {
		t.Errorf("after a lasting drop: the fall after %vs, want 45 s (the break-even halved, 37.5 s, on the next sample)", got)
	}
}

// TestSpreadLeavesOutTheCapsChanges: a change measured from a saturated
// sample is the cap's (the demand was already above what the sample could
// say), so it is not the demand's movement: a step through a saturated
// sample widens the spread only by the rise into it.
func TestSpreadLeavesOutTheCapsChanges(t *testing.T) {
	spread := func(capped bool) float64 {
		b := newBudget(0.025)
		for i, y := range []float64{2, 2, 2, 2, 4, 10, 10, 10, 10, 10} {
			b.observe(at(float64(15*i)), y, false, capped && i == 4, false, 15*time.Second)
		}
		_, s := b.levelAndSpread(15 * time.Second)
		return s
	}
	measured, throughCap := spread(false), spread(true)
	// Nine changes one sample apart: 2 and 6 when the fifth is measured;
	// only the 2 into it when it is saturated.
	if want := math.Sqrt((4.0 + 36) / 9 / 2); !near(measured, want) {
		t.Errorf("measured: spread %v, want %v", measured, want)
	}
	if want := math.Sqrt(4.0 / 8 / 2); !near(throughCap, want) {
		t.Errorf("through a saturated sample: spread %v, want %v", throughCap, want)
	}
}

// TestBudgetedProfileNamesItsHeadroomAndHold: the reason says when the
// headroom raised the value and when the churn budget held a fall.
func TestBudgetedProfileNamesItsHeadroomAndHold(t *testing.T) {
	c := NewComputer(budgeted(t))
	for i := range 10 {
		now := at(float64(15 * i))
		c.Compute(now, Input{Compute: pressure.ComputePressure{Resource: 0.5 + 0.05*float64(i%3), ReplicaCount: 4}, MeasuredAt: now.Add(-30 * time.Second)})
	}
	now := at(150)
	s := c.Compute(now, Input{Compute: pressure.ComputePressure{Resource: 0.1, ReplicaCount: 4}, MeasuredAt: now.Add(-30 * time.Second)})
	if !strings.Contains(s.Reason, "; headroom +") || !strings.Contains(s.Reason, "; scale-in held by churn budget") {
		t.Errorf("reason %q, want the headroom and the hold named", s.Reason)
	}
}

// TestShortfallBudgetBuysWidthsWhereTheyAreCheap: at the typical spread
// the headroom is k widths, and so where the spread is wider (the demand
// moving, which a normal tail understates); where it is narrower a width
// costs less and the headroom spends more of them, w^2 = k^2 - 2 ln(spread
// / typical). The typical spread is a running mean of the spreads read,
// and repeated data does not move it.
func TestShortfallBudgetBuysWidthsWhereTheyAreCheap(t *testing.T) {
	b := budget{k: 2, typical: 1}
	for _, tt := range []struct{ spread, want float64 }{
		{1, 2},
		{3, 2},
		{0.5, math.Sqrt(4 + 2*math.Ln2)},
		{math.Exp(-1), math.Sqrt(6)},
	} {
		if got := b.widths(tt.spread); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("spread %v: %v widths, want %v", tt.spread, got, tt.want)
		}
	}
	if got := (&budget{k: 1.5}).widths(0.2); got != 1.5 {
		t.Errorf("no typical spread yet: %v widths, want k", got)
	}

	c := newBudget(0.025)
	for i, y := range []float64{10, 12, 10, 12} {
		c.observe(at(float64(15*i)), y, false, false, false, 15*time.Second)
	}
	typical := c.typical
	if typical <= 0 {
		t.Fatalf("typical spread %v after four samples", typical)
	}
	c.observe(at(45), 30, false, false, false, 15*time.Second) // the last sample's data again
	if c.typical != typical {
		t.Errorf("repeated data moved the typical spread: %v, was %v", c.typical, typical)
	}
}
