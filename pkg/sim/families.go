package sim

import (
	"fmt"
	"math"
)

// Family is a generator of load series that share a shape and differ in
// their parameters (level, amplitude, noise, timing), each drawn from the
// seed. Everything is deterministic: a seed always gives the same series.
type Family struct {
	Name string
	// About says what the shape is, for the report.
	About string
	gen   func(g *lcg, name string) Series
}

// Series generates the family's series for seed (> 0).
func (f Family) Series(seed int64) Series {
	return f.gen(newLCG(seed*7919+int64(len(f.Name))), fmt.Sprintf("%s (seed %d)", f.Name, seed))
}

// familyTurns is every family series' length, the reference series'.
const familyTurns = 120

// between draws uniformly from [lo, hi).
func (g *lcg) between(lo, hi float64) float64 { return lo + float64((hi-lo)*g.next()) }

// familyCeiling is the most load a family series offers: 11 replicas'
// worth at the ReferenceModel's target, so that every requirement fits
// in its 12 replicas and no shortfall is forced on every controller.
const familyCeiling = 9000

// noisy multiplies v by U[1-noise, 1+noise) and, with probability
// outliers, by a spike of 1.5..2.5 instead: the outliers a real pipeline
// shows (a retry storm, a batch job, one slow scrape).
func (g *lcg) noisy(v, noise, outliers float64) float64 {
	f := g.between(1-noise, 1+noise)
	if outliers > 0 && g.next() < outliers {
		f = g.between(1.5, 2.5)
	}
	return min(familyCeiling, max(50, math.Round(v*f)))
}

// Families are the generated families the report scores every controller
// on, besides the reference series.
func Families() []Family {
	return []Family{
		{Name: "plateau and drop", About: "a plateau of 1500..4500 requests/s with 5..25 % noise and 0..4 % outliers that drops to 20..50 % of its level at a turn in 50..80", gen: plateauDrop},
		{Name: "sawtooth", About: "ramps from 300..800 to 2500..6000 requests/s over 15..30 turns, then falls back at once; 3..15 % noise", gen: sawtooth},
		{Name: "double peak", About: "two bell-shaped peaks of 1500..5000 requests/s (widths 4..12 turns) near turns 35 and 85 on a base of 400..900; 3..15 % noise", gen: doublePeak},
		{Name: "flash crowd", About: "a base of 400..900 requests/s hit at a turn in 40..60 by a crowd of 1500..5000 more that decays with a 6..20-turn time constant; 5..15 % noise", gen: flashCrowd},
		{Name: "slow ramp", About: "climbs from 300..800 to 2500..6000 requests/s over 60..110 turns, then holds; 3..15 % noise", gen: slowRamp},
		{Name: "random walk", About: "a multiplicative random walk from 1000..3000 requests/s with 3..10 % steps, kept in 300..7000; 2..10 % noise and 0..3 % outliers", gen: randomWalk},
		{Name: "diurnal wave", About: "a wave of 1500..3500 +/- 40..90 % requests/s with a 60..120-turn period and a random phase; 5..25 % noise", gen: diurnal},
	}
}

// FamilySeeds is how many seeds of each family the report runs.
const FamilySeeds = 20

func plateauDrop(g *lcg, name string) Series {
	level, noise, outliers := g.between(1500, 4500), g.between(0.05, 0.25), g.between(0, 0.04)
	drop, to := 50+int(g.next()*31), g.between(0.2, 0.5)
	load := make([]float64, familyTurns)
	for t := range load {
		v := level
		if t >= drop {
			v = level * to
		}
		load[t] = g.noisy(v, noise, outliers)
	}
	return Series{Name: name, Load: load, EventStart: drop, EventEnd: min(familyTurns, drop+30)}
}

func sawtooth(g *lcg, name string) Series {
	lo, hi, period, noise := g.between(300, 800), g.between(2500, 6000), 15+int(g.next()*16), g.between(0.03, 0.15)
	load := make([]float64, familyTurns)
	for t := range load {
		phase := float64(t%period) / float64(period-1)
		load[t] = g.noisy(lo+float64((hi-lo)*phase), noise, 0)
	}
	return Series{Name: name, Load: load, EventStart: period, EventEnd: 2 * period}
}

func doublePeak(g *lcg, name string) Series {
	base, noise := g.between(400, 900), g.between(0.03, 0.15)
	type peak struct{ at, width, height float64 }
	peaks := [2]peak{
		{g.between(28, 42), g.between(4, 12), g.between(1500, 5000)},
		{g.between(78, 92), g.between(4, 12), g.between(1500, 5000)},
	}
	load := make([]float64, familyTurns)
	for t := range load {
		v := base
		for _, p := range peaks {
			d := (float64(t) - p.at) / p.width
			v += p.height * math.Exp(-float64(d*d)/2)
		}
		load[t] = g.noisy(v, noise, 0)
	}
	start := int(peaks[0].at - 2*peaks[0].width)
	return Series{Name: name, Load: load, EventStart: start, EventEnd: start + 30}
}

func flashCrowd(g *lcg, name string) Series {
	base, crowd, at, tau, noise := g.between(400, 900), g.between(1500, 5000), 40+int(g.next()*21), g.between(6, 20), g.between(0.05, 0.15)
	load := make([]float64, familyTurns)
	for t := range load {
		v := base
		if t >= at {
			v += crowd * math.Exp(-float64(t-at)/tau)
		}
		load[t] = g.noisy(v, noise, 0)
	}
	return Series{Name: name, Load: load, EventStart: at, EventEnd: at + 30}
}

func slowRamp(g *lcg, name string) Series {
	lo, hi, turns, noise := g.between(300, 800), g.between(2500, 6000), 60+int(g.next()*51), g.between(0.03, 0.15)
	load := make([]float64, familyTurns)
	for t := range load {
		frac := min(1, float64(t)/float64(turns))
		load[t] = g.noisy(lo+float64((hi-lo)*frac), noise, 0)
	}
	return Series{Name: name, Load: load}
}

func randomWalk(g *lcg, name string) Series {
	level, step, noise, outliers := g.between(1000, 3000), g.between(0.03, 0.10), g.between(0.02, 0.10), g.between(0, 0.03)
	load := make([]float64, familyTurns)
	for t := range load {
		level = min(7000, max(300, level*g.between(1-step, 1+step)))
		load[t] = g.noisy(level, noise, outliers)
	}
	return Series{Name: name, Load: load}
}

func diurnal(g *lcg, name string) Series {
	base, amp, period, phase, noise := g.between(1500, 3500), g.between(0.4, 0.9), g.between(60, 120), g.between(0, 2*math.Pi), g.between(0.05, 0.25)
	load := make([]float64, familyTurns)
	for t := range load {
		v := base * (1 + float64(amp*math.Sin(float64(2*math.Pi*float64(t))/period+phase)))
		load[t] = g.noisy(max(200, v), noise, 0)
	}
	return Series{Name: name, Load: load}
}
