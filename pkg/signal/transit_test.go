package signal

import (
	"math"
	"testing"
	"time"
)

// TestJumpCountsThePoolInTransitionOnce replays the e2e jump (e2e/jump_test.go)
// as the scraped default profile saw it, a sample a second: a new target
// at half a replica's worth, the load jumping to five replicas' worth,
// five saturated samples of the one replica while the surge's five
// started, one sample of that replica reading 0.79 (the load already
// spread onto four replicas the scrape had not listed yet), then the
// five at the target (0.698 to 0.712, as the run read them). Before, each
// sample of the one replica raised the headroom's k again (2.3 to 3.8),
// the spread read the pool's arrival, 0.79 to 3.5, as the demand moving
// (0.19 to 0.75), and the signal asked for 9 replicas (the run's pool
// went to its maximum, 10); the 0.79 ended the surge, asking for 3 (a
// sync then would have cut the five). The episode counts once: k moves on
// its first saturated sample only, the surge holds the five through the
// sample of the pool in transition, and the signal asks for at most one
// replica above them.
func TestJumpCountsThePoolInTransitionOnce(t *testing.T) {
	c := NewComputer(budgeted(t))
	type read struct {
		pressure float64
		n        int
	}
	var samples []read
	for range 6 {
		samples = append(samples, read{0.35, 1})
	}
	for range 5 {
		samples = append(samples, read{1, 1})
	}
	samples = append(samples, read{0.79, 1})
	atTarget := []float64{0.700, 0.703, 0.698, 0.712, 0.701, 0.699}
	for i := range 60 {
		samples = append(samples, read{atTarget[i%len(atTarget)], 5})
	}
	var afterJump, beforeFive float64
	most, least := 0, math.MaxInt
	for i, s := range samples {
		now := at(float64(i))
		// A scrape's data is a few milliseconds older than the sample.
		sig := c.Compute(now, Input{Compute: cp(s.pressure, s.pressure, 0, s.n), MeasuredAt: now.Add(-5 * time.Millisecond)})
		switch {
		case i == 6:
			afterJump = c.budget.k
		case i == 11:
			beforeFive = c.budget.k
			least = int(math.Ceil(sig.ScaleValue/0.7 - 1e-9))
		case i >= 12:
			most = max(most, int(math.Ceil(sig.ScaleValue/0.7-1e-9)))
		}
	}
	if beforeFive != afterJump {
		t.Errorf("the one replica's samples after the jump's first moved k from %v to %v", afterJump, beforeFive)
	}
	if least < 5 {
		t.Errorf("the one replica at 0.79 ended the surge: asked for %d replicas, want the five", least)
	}
	if most > 6 {
		t.Errorf("the five at the target: asked for up to %d replicas, want at most 6 (k %v, headroom %v)", most, c.budget.k, c.last.headroom)
	}
}

// TestPoolInTransition: a sample reads a pool in transition when every
// value published from a start-up before its data up to the data asked for
// more replicas than it read, beyond the autoscaler's tolerance.
func TestPoolInTransition(t *testing.T) {
	published := func(values ...[2]float64) *asks {
		var a asks
		for _, v := range values {
			a.add(at(v[0]), v[1])
		}
		return &a
	}
	five := [][2]float64{{0, 0.7}, {15, 3.5}, {30, 3.5}} // one replica, then five asked for
	for _, tt := range []struct {
		name    string
		a       *asks
		n       int
		startup time.Duration
		want    bool
	}{
		{"one read, five asked for", published(five...), 1, 0, true},
		{"four read", published(five...), 4, 0, true},
		{"the five read", published(five...), 5, 0, false},
		{"within the tolerance: 3.8 for five", published([2]float64{30, 3.8}), 5, 0, false},
		{"the five asked for less than a start-up ago", published(five...), 1, 20 * time.Second, false},
		{"the five asked for a start-up ago", published(five...), 1, 16 * time.Second, true},
		{"one asked for since: a scale-in", published(append(five, [2]float64{30.5, 0.7})...), 1, 0, false},
		{"five asked for after the data", published([2]float64{0, 0.7}, [2]float64{32, 3.5}), 1, 0, false},
		{"nothing held a start-up back", published(five...), 1, time.Minute, false},
	} {
		if got := tt.a.inTransit(at(31), tt.startup, tt.n, 0.7); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestShortfallBudgetLeavesOutAPoolInTransition: a sample of a pool in
// transition moves k neither way, and a change from it is left out of the
// spread (the change into it stays).
func TestShortfallBudgetLeavesOutAPoolInTransition(t *testing.T) {
	b := newBudget(0.025)
	b.observe(at(0), 2, false, false, false, 15*time.Second)
	k := b.k
	b.observe(at(15), 1, true, false, true, 15*time.Second)
	b.observe(at(30), 1, false, false, true, 15*time.Second)
	if b.k != k {
		t.Errorf("k %v after two samples in transition, want %v", b.k, k)
	}
	b.observe(at(45), 5, false, false, false, 15*time.Second)
	// Three changes: 2 to 1 stays, 1 to 1 and 1 to 5 are from the pool in
	// transition.
	if _, s := b.levelAndSpread(15 * time.Second); !near(s, math.Sqrt(1.0/1/2)) {
		t.Errorf("spread %v, want %v", s, math.Sqrt(1.0/2))
	}
}

// TestSurgeHoldsThroughAPoolInTransition: a clear sample of a pool in
// transition does not end the surge within one autoscaler sync and the
// start-up of its ask (the load may be on replicas the sample did not
// read); after that the pool is held, not in transition, and the sample
// ends it, so a pool that cannot grow (at its maximum) does not surge for
// ever. A clear sample of the pool asked for ends it at once.
func TestSurgeHoldsThroughAPoolInTransition(t *testing.T) {
	for _, tt := range []struct {
		name  string
		after float64 // seconds from the surge's ask to the clear sample
		n     int
		ends  bool
	}{
		{"the one replica, 5 s on", 5, 1, false},
		{"the one replica, one sync on", 15, 1, true},
		{"the two asked for", 5, 2, true},
	} {
		c := NewComputer(responsive(t))
		for i := range 3 {
			c.Compute(at(float64(i)), Input{Compute: cp(0.35, 0, 0, 1)})
		}
		c.Compute(at(3), Input{Compute: cp(1, 0, 0, 1)}) // the surge asks for two
		if c.surge.mark == 0 {
			t.Fatalf("%s: no surge", tt.name)
		}
		s := compute(c, at(3+tt.after), Input{Compute: cp(0.5, 0, 0, tt.n)})
		if s.Surging == tt.ends {
			t.Errorf("%s: surging %v, want %v", tt.name, s.Surging, !tt.ends)
		}
	}
}
