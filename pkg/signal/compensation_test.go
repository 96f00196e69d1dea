package signal

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// rng is a small deterministic generator (Park-Miller), so the noisy
// series below are the same on every run.
type rng struct{ s int64 }

func (r *rng) next() float64 {
	r.s = r.s * 48271 % 2147483647
	return float64(r.s) / 2147483647
}

func responsive(t testing.TB) Options {
	t.Helper()
	o, err := ProfileOptions(ProfileResponsive)
	if err != nil {
		t.Fatal(err)
	}
	o.SurgeTarget = 0.7
	return o
}

// sample is one raw demand (resource pressure x replicas) measured age
// before the sample at turn i of 15 s.
func sample(i int, demand float64, n int, age time.Duration) (time.Time, Input) {
	now := at(float64(15 * i))
	return now, Input{Compute: cp(0, demand/float64(n), 0, n), MeasuredAt: now.Add(-age)}
}

// result is a signal with what the compensation did to it.
type result struct {
	ScalingSignal
	Lead    float64
	Surging bool
	Lag     time.Duration
}

func compute(c *Computer, now time.Time, in Input) result {
	s := c.Compute(now, in)
	return result{s, c.last.lead, c.last.surging, c.last.lag}
}

// drive feeds raw demands at one sample per 15 s, each measured age
// earlier, across n replicas, and returns the signals.
func drive(c *Computer, demands []float64, n int, age time.Duration) []result {
	out := make([]result, len(demands))
	for i, d := range demands {
		now, in := sample(i, d, n, age)
		out[i] = compute(c, now, in)
	}
	return out
}

// kedaOscillation counts reversals of the replica count KEDA reads at
// target 0.7.
func kedaOscillation(sigs []result) int {
	osc, prev, dir := 0, -1, 0
	for _, s := range sigs {
		n := int(math.Ceil(s.ScaleValue/0.7 - 1e-9))
		if prev >= 0 && n != prev {
			d := 1
			if n < prev {
				d = -1
			}
			if dir != 0 && d != dir {
				osc++
			}
			dir = d
		}
		prev = n
	}
	return osc
}

// noisySeries are the shapes the lead must not make worse: heavy noise,
// outliers, and sudden drops, each around a plateau.
func noisySeries() map[string][]float64 {
	g := &rng{s: 20261201}
	plateau := func(level, noise, outliers float64, drops ...int) []float64 {
		out := make([]float64, 240)
		for i := range out {
			v := level
			for _, d := range drops {
				if i >= d {
					v /= 3
				}
			}
			f := 1 - noise + 2*noise*g.next()
			if g.next() < outliers {
				f = 2 + g.next()
			}
			out[i] = min(8, v*f) // 8 replicas, pressure <= 1 each
		}
		return out
	}
	return map[string][]float64{
		"noise 10 %":                      plateau(4, 0.10, 0),
		"noise 30 %":                      plateau(4, 0.30, 0),
		"noise 30 %, 5 % outliers":        plateau(3, 0.30, 0.05),
		"noise 20 %, drops at 80 and 160": plateau(6, 0.20, 0, 80, 160),
		"noise 20 %, 5 % outliers, drop":  plateau(6, 0.20, 0.05, 120),
	}
}

// TestLeadAddsNoOscillationOnNoise: on noisy plateaus, with outliers and
// sudden drops, the published count oscillates no more with the lead than
// without it, and the lead rarely fires at all.
func TestLeadAddsNoOscillationOnNoise(t *testing.T) {
	for name, demands := range noisySeries() {
		t.Run(name, func(t *testing.T) {
			with := responsive(t)
			without := with
			without.LeadSignificance = 10 // the same noise margin, a lead that never stands out
			got := drive(NewComputer(with), demands, 8, 45*time.Second)
			base := drive(NewComputer(without), demands, 8, 45*time.Second)
			fired := 0
			for _, s := range got {
				if s.Lead > 0 {
					fired++
				}
				if s.Lead < 0 || s.ScaleValue < s.RawScaleValue {
					t.Fatalf("lead %v, ScaleValue %v below the measurement %v", s.Lead, s.ScaleValue, s.RawScaleValue)
				}
			}
			if a, b := kedaOscillation(got), kedaOscillation(base); a > b {
				t.Errorf("oscillation %d with the lead, %d without", a, b)
			}
			if fired*20 > len(got) {
				t.Errorf("the lead fired on %d of %d samples of noise", fired, len(got))
			}
		})
	}
}

func TestLeadFollowsATrend(t *testing.T) {
	ramp := make([]float64, 12)
	for i := range ramp {
		ramp[i] = 1 + 0.1*float64(i) // +0.1 per 15 s
	}
	sigs := drive(NewComputer(responsive(t)), ramp, 8, 45*time.Second)
	last := sigs[len(sigs)-1]
	if !near(last.Lead, 0.3) || !near(last.ScaleValue, ramp[len(ramp)-1]+0.3) {
		t.Errorf("lead %v, ScaleValue %v; want 0.3 ahead of %v", last.Lead, last.ScaleValue, ramp[len(ramp)-1])
	}
	if want := "resource pressure 0.26 across 8 replica(s); lead +0.30"; last.Reason != want {
		t.Errorf("reason %q, want %q", last.Reason, want)
	}
	if sigs[1].Lead != 0 {
		t.Errorf("lead %v from two samples; want none before three", sigs[1].Lead)
	}
	// A fresh sample has no lag to lead over.
	fresh := drive(NewComputer(responsive(t)), ramp, 8, 0)
	if l := fresh[len(fresh)-1].Lead; l != 0 {
		t.Errorf("fresh lead %v, want 0", l)
	}
	// ReplicaStartup is part of the lag.
	o := responsive(t)
	o.ReplicaStartup = 30 * time.Second
	withStartup := drive(NewComputer(o), ramp, 8, 45*time.Second)
	if l := withStartup[len(withStartup)-1]; !near(l.Lead, 0.5) || l.Lag != 75*time.Second {
		t.Errorf("lead %v over lag %v; want 0.5 over 75s", l.Lead, l.Lag)
	}
}

func TestLeadIgnoresAFallAndAnOutlier(t *testing.T) {
	falling := []float64{4, 3.8, 3.6, 3.4, 3.2, 3, 2.8}
	for _, s := range drive(NewComputer(responsive(t)), falling, 8, 45*time.Second) {
		if s.Lead != 0 {
			t.Fatalf("a falling trend led by %v", s.Lead)
		}
	}
	// One spike in a flat series moves the median slope by nothing.
	spike := []float64{2, 2, 2, 6, 2, 2, 2, 2}
	for i, s := range drive(NewComputer(responsive(t)), spike, 8, 45*time.Second) {
		if s.Lead != 0 {
			t.Fatalf("sample %d: an outlier led by %v", i, s.Lead)
		}
	}
}

// TestRepeatedDataIsOneSample: a source whose data has not moved on (the
// same MeasuredAt) adds nothing to the trend.
func TestRepeatedDataIsOneSample(t *testing.T) {
	c := NewComputer(responsive(t))
	for i, d := range []float64{1, 1.1, 1.2} {
		now, in := sample(i, d, 8, 0)
		c.Compute(now, in)
	}
	if c.trend.n != 3 {
		t.Fatalf("%d samples held", c.trend.n)
	}
	now, in := sample(5, 9, 8, 0)
	in.MeasuredAt = at(30) // the third sample's data again
	c.Compute(now, in)
	if c.trend.n != 3 {
		t.Errorf("%d samples held after repeated data, want 3", c.trend.n)
	}
}

func TestSaturationSurge(t *testing.T) {
	c := NewComputer(responsive(t))
	step := func(i int, res float64, n int, age time.Duration) result {
		now := at(float64(15 * i))
		return compute(c, now, Input{Compute: cp(0, res, 0, n), MeasuredAt: now.Add(-age)})
	}
	// A fresh saturated sample across 2 asks for 2n = 4 at target 0.7.
	if s := step(0, 1, 2, 0); !near(s.ScaleValue, 4*0.7) || !s.Surging {
		t.Fatalf("fresh: %v surging %v, want 2.8", s.ScaleValue, s.Surging)
	}
	// Stale: n + 4 = 6 when that is more than 2n.
	if s := step(1, 1, 2, 45*time.Second); !near(s.ScaleValue, 6*0.7) {
		t.Fatalf("stale: %v, want 4.2", s.ScaleValue)
	}
	// The same pool saturated again keeps the mark: no ratchet.
	for i := 2; i < 12; i++ {
		if s := step(i, 1, 2, 45*time.Second); !near(s.ScaleValue, 6*0.7) {
			t.Fatalf("sample %d: %v, want the mark 4.2", i, s.ScaleValue)
		}
	}
	// The pool climbed to 6 (3 times the pool first seen saturated) and
	// is still saturated: the doubling assumed was short by that growth,
	// so the factor is 2 x 3 = 6: 36 replicas.
	if s := step(12, 1, 6, 45*time.Second); !near(s.ScaleValue, 36*0.7) {
		t.Fatalf("climbing: %v, want 25.2", s.ScaleValue)
	}
	// A sample of a smaller pool still in the pipeline changes nothing.
	if s := step(13, 1, 2, 45*time.Second); !near(s.ScaleValue, 36*0.7) {
		t.Fatalf("an older pool: %v, want the mark 25.2", s.ScaleValue)
	}
	// The pool climbed again, to 9 (x1.5): the factor 9, 81 replicas.
	if s := step(14, 1, 9, 45*time.Second); !near(s.ScaleValue, 81*0.7) {
		t.Fatalf("climbing again: %v, want 56.7", s.ScaleValue)
	}
	// The factor is bounded: a pool of 100 still saturated asks for at most
	// 32 times itself.
	if s := step(15, 1, 100, 45*time.Second); !near(s.ScaleValue, 3200*0.7) {
		t.Fatalf("bounded: %v, want 2240", s.ScaleValue)
	}
	// A fresh sample below the cap ends the surge: the demand is the signal
	// (a fall, held one sample by the gate as ever, then released).
	s := step(16, 0.5, 6, 0)
	if s.Surging {
		t.Fatalf("still surging on an unsaturated sample")
	}
	if s = step(17, 0.5, 6, 0); !near(s.ScaleValue, 3) || s.Surging {
		t.Errorf("after the surge: %v surging %v, want 3", s.ScaleValue, s.Surging)
	}
	if s.Reason != "resource pressure 0.50 across 6 replica(s)" {
		t.Errorf("reason %q", s.Reason)
	}
	// A new episode starts from a doubling again.
	if s = step(18, 1, 6, 0); !near(s.ScaleValue, 12*0.7) {
		t.Errorf("a new episode: %v, want 8.4", s.ScaleValue)
	}
	c = NewComputer(responsive(t))
	if r := step(0, 1, 1, 0).Reason; r != "resource pressure 1.00 across 1 replica(s); saturation surge" {
		t.Errorf("reason %q", r)
	}
}

// TestSurgeEndsOnlyOnAClearlyUnsaturatedSample: a pool held at
// saturation reads 0.999 or 0.95 as often as 1 (replicas that cannot
// follow: at the maximum, pods pending); such a sample neither ends the
// surge (which would scale in and out again) nor asks for more. A sample
// below 90 % of the surge level ends it.
func TestSurgeEndsOnlyOnAClearlyUnsaturatedSample(t *testing.T) {
	c := NewComputer(responsive(t))
	step := func(i int, res float64) result {
		now := at(float64(15 * i))
		return compute(c, now, Input{Compute: cp(0, res, 0, 2), MeasuredAt: now})
	}
	for i, res := range []float64{1, 0.999, 1, 0.95, 0.92, 1, 0.999} {
		if s := step(i, res); !near(s.ScaleValue, 4*0.7) {
			t.Fatalf("sample %d at %v: %v, want the surge's 2.8", i, res, s.ScaleValue)
		}
	}
	if s := step(7, 0.85); s.Surging {
		t.Errorf("a sample at 0.85 did not end the surge: %v", s.ScaleValue)
	}
}

// TestLeadSkipsSaturatedSamples: a saturated sample's demand is a lower
// bound, so the lead's trend does not read it; a trend read through the
// cap would rise when the cap lifts, a rise already over.
func TestLeadSkipsSaturatedSamples(t *testing.T) {
	c := NewComputer(responsive(t))
	for i, res := range []float64{0.5, 1, 1, 1, 0.6} {
		now := at(float64(15 * i))
		compute(c, now, Input{Compute: cp(0, res, 0, 4), MeasuredAt: now.Add(-30 * time.Second)})
	}
	if c.trend.n != 2 {
		t.Errorf("%d samples in the trend, want the 2 measured ones", c.trend.n)
	}
}

func TestScaleInHysteresisOnStaleSamples(t *testing.T) {
	o := responsive(t)
	o.LeadWindow, o.ScaleInNoiseMargin = 0, 0 // the 5 % margin alone
	for _, tt := range []struct {
		name string
		age  time.Duration
		want float64
	}{
		{"a stale fall keeps 5 %", 45 * time.Second, 2 * 1.05},
		{"a fresh fall is trusted", 0, 2},
	} {
		c := NewComputer(o)
		var s ScalingSignal
		for i, d := range []float64{4, 2, 2} { // the gate holds the first fall
			now, in := sample(i, d, 8, tt.age)
			s = c.Compute(now, in)
		}
		if !near(s.ScaleValue, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, s.ScaleValue, tt.want)
		}
	}
	// The margin never raises the signal above what was published.
	c := NewComputer(o)
	for i, d := range []float64{4, 3.99, 3.99} {
		now, in := sample(i, d, 8, 45*time.Second)
		if s := c.Compute(now, in); s.ScaleValue > 4 {
			t.Fatalf("sample %d: %v above the 4 published", i, s.ScaleValue)
		}
	}
}

func TestLag(t *testing.T) {
	o := responsive(t)
	o.ReplicaStartup = 20 * time.Second
	c := NewComputer(o)
	if l := compute(c, at(0), in(0.5, 2)).Lag; l != 20*time.Second {
		t.Errorf("no MeasuredAt: lag %v, want the start-up alone", l)
	}
	future := Input{Compute: cp(0.5, 0, 0, 2), MeasuredAt: at(100)}
	if l := compute(c, at(15), future).Lag; l != 20*time.Second {
		t.Errorf("a measurement after now: lag %v, want age 0", l)
	}
	// The longer of the configured and the measured start-up counts.
	measured := in(0.5, 2)
	measured.MeasuredStartup = 35 * time.Second
	if l := compute(c, at(30), measured).Lag; l != 35*time.Second {
		t.Errorf("measured start-up 35s over the configured 20s: lag %v, want 35s", l)
	}
	measured.MeasuredStartup = 10 * time.Second
	if l := compute(c, at(45), measured).Lag; l != 20*time.Second {
		t.Errorf("measured start-up 10s under the configured 20s: lag %v, want 20s", l)
	}
}

func TestProfiles(t *testing.T) {
	names := ProfileNames()
	if names[0] != DefaultProfile || !slices.Contains(names, ProfileOriginal) {
		t.Fatalf("profiles %v", names)
	}
	orig, err := ProfileOptions(ProfileOriginal)
	if err != nil || orig != DefaultOptions() {
		t.Errorf("original %+v (%v), want DefaultOptions", orig, err)
	}
	for _, n := range names {
		if _, err := ProfileOptions(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ProfileOptions("fast"); err == nil || err.Error() != `profile "fast" (allowed: budgeted, responsive, original)` {
		t.Errorf("err = %v", err)
	}
}

// TestComputeAllocatesOnlyTheReason: with every compensation on, a sample
// costs one allocation, the Reason string.
func TestComputeAllocatesOnlyTheReason(t *testing.T) {
	c := NewComputer(responsive(t))
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		now := at(float64(15 * i))
		res := 0.3 + 0.1*float64(i%7)
		if i%11 == 0 {
			res = 1
		}
		c.Compute(now, Input{Compute: pressure.ComputePressure{Resource: res, ReplicaCount: 6}, MeasuredAt: now.Add(-30 * time.Second)})
		i++
	})
	if allocs > 1 {
		t.Errorf("%v allocations per sample, want 1", allocs)
	}
}

func TestWarmSamplesCoverTheComputersMemory(t *testing.T) {
	responsive, _ := ProfileOptions(ProfileResponsive)
	budgeted, _ := ProfileOptions(ProfileBudgeted)
	for _, c := range []struct {
		opts     Options
		interval time.Duration
		want     int
	}{
		{responsive, time.Second, DefaultLeadWindow},
		{DefaultOptions(), 5 * time.Second, 30}, // five 30 s half-lives
		{DefaultOptions(), 10 * time.Second, 15},
		{budgeted, 5 * time.Second, 60},              // the 5 min scale-in hold
		{budgeted, time.Minute, budgetSpreadSamples}, // the spread the budget learns from
		{budgeted, time.Second, MaxBackfill},         // 300 s of hold, at most 240 samples
		{responsive, 0, 0},
	} {
		if got := c.opts.WarmSamples(c.interval); got != c.want {
			t.Errorf("WarmSamples(%v) = %d, want %d", c.interval, got, c.want)
		}
	}
}

// TestSaturationSurgeReadsTheWorkingSet: a saturated sample whose working
// set measures demand five times the pool asks for that at once, where the
// growth estimate alone asks for a doubling; a working set below the
// growth estimate never lowers it; the factor cap bounds it; and the first
// unsaturated sample ends the episode as ever.
func TestSaturationSurgeReadsTheWorkingSet(t *testing.T) {
	c := NewComputer(responsive(t))
	step := func(i int, res float64, n int, working *float64, age time.Duration) result {
		now := at(float64(15 * i))
		p := cp(0, res, 0, n)
		p.WorkingSetDemand = working
		return compute(c, now, Input{Compute: p, MeasuredAt: now.Add(-age)})
	}
	demand := func(v float64) *float64 { return &v }
	// 2 replicas saturated; the working set is 5 x 2 x 0.7 = 7 replicas
	// at full pressure: 10 replicas at the 0.7 target, five times the pool.
	if s := step(0, 1, 2, demand(7), 0); !near(s.ScaleValue, 10*0.7) || !s.Surging {
		t.Fatalf("working set 5x: %v surging %v, want 10 replicas (7)", s.ScaleValue, s.Surging)
	} else if want := "resource pressure 1.00 across 2 replica(s); saturation surge from the working set"; s.Reason != want {
		t.Fatalf("working set 5x: reason %q, want %q", s.Reason, want)
	}
	// It grows while the pool is saturated: 10x, 20 replicas.
	if s := step(1, 1, 2, demand(14), 45*time.Second); !near(s.ScaleValue, 20*0.7) {
		t.Fatalf("working set 10x: %v, want 20 replicas (14)", s.ScaleValue)
	}
	// The mark never falls while the episode lasts, whatever the working set says.
	if s := step(2, 1, 2, demand(1), 45*time.Second); !near(s.ScaleValue, 20*0.7) {
		t.Fatalf("a smaller working set: %v, want the mark 14", s.ScaleValue)
	}
	// The factor cap bounds it: 32 x 2 replicas at most.
	if s := step(3, 1, 2, demand(1000), 45*time.Second); !near(s.ScaleValue, 64*0.7) {
		t.Fatalf("capped: %v, want 64 replicas (44.8)", s.ScaleValue)
	}
	// The first unsaturated sample ends it: the clamped demand is the signal.
	if s := step(4, 0.5, 6, demand(1000), 0); s.Surging {
		t.Fatalf("still surging on an unsaturated sample: %v", s.ScaleValue)
	}

	// A new episode whose working set is below the growth estimate's
	// doubling: the doubling stands (the working set never asks for less).
	c = NewComputer(responsive(t))
	if s := step(0, 1, 4, demand(3), 0); !near(s.ScaleValue, 8*0.7) {
		t.Fatalf("a small working set: %v, want the doubling, 8 replicas (5.6)", s.ScaleValue)
	} else if strings.Contains(s.Reason, "working set") {
		t.Fatalf("a small working set: reason %q names the working set, which did not set the surge", s.Reason)
	}
	// The working set overtaking the growth estimate later in the episode
	// says so from then on.
	if s := step(1, 1, 4, demand(14), 45*time.Second); !near(s.ScaleValue, 20*0.7) || !strings.HasSuffix(s.Reason, "; saturation surge from the working set") {
		t.Fatalf("a working set past the doubling: %v, reason %q; want 20 replicas (14) from the working set", s.ScaleValue, s.Reason)
	}
}

// TestSaturationSurgeWithoutWorkingSetIsUnchanged: a source with no
// working set (WorkingSetDemand absent) surges exactly as the growth
// estimate alone does, sample for sample, and a working set of 0 (idle
// replicas) asks for nothing beyond it either.
func TestSaturationSurgeWithoutWorkingSetIsUnchanged(t *testing.T) {
	zero := 0.0
	pools := []int{2, 2, 2, 6, 2, 9, 100, 6, 6, 6}
	levels := []float64{1, 1, 1, 1, 1, 1, 1, 0.5, 0.5, 1}
	for _, working := range []*float64{nil, &zero} {
		a, b := NewComputer(responsive(t)), NewComputer(responsive(t))
		for i, n := range pools {
			now := at(float64(15 * i))
			age := time.Duration(i%2) * 45 * time.Second
			plain := Input{Compute: cp(0, levels[i], 0, n), MeasuredAt: now.Add(-age)}
			with := plain
			with.Compute.WorkingSetDemand = working
			got, want := a.Compute(now, with), b.Compute(now, plain)
			if got.ScaleValue != want.ScaleValue || got.Reason != want.Reason {
				t.Fatalf("working set %v, sample %d: %v %q, want %v %q", working, i, got.ScaleValue, got.Reason, want.ScaleValue, want.Reason)
			}
		}
	}
}
