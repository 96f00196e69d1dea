package control

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/sim"
)

// burstsEveryHour is a day per minute of an event stream's shape: a level
// of 6 replicas' worth with +-20 % noise, and a one-minute burst to 24
// every 80..120 minutes (seeded; the turns of the bursts are returned).
func burstsEveryHour() (sim.Series, []int) {
	s := uint64(20261207)
	next := func() float64 {
		s = s*6364136223846793005 + 1442695040888963407
		return float64(s>>11) / float64(1<<53)
	}
	load := make([]float64, 24*60)
	var bursts []int
	at := 60 + int(next()*40)
	for t := range load {
		load[t] = 6 * (0.8 + 0.4*next())
		if t == at {
			load[t] = 24
			bursts = append(bursts, t)
			at += 80 + int(next()*41)
		}
	}
	return sim.Series{Name: "a burst every hour or so", Load: load}, bursts
}

// TestBurstsEveryHourAreNotPaidFor: a burst of one minute is over before a
// sample three minutes old shows it. The default profile, deployed at
// delay 3, must not pay for it afterwards: within 10 minutes of each burst
// the pool is back within 2 replicas of where it was before, its total is
// at most the frontier's (the tuned baseline's cheapest setting short no
// more often and reversing no more), and it reverses less often than the
// HPA's default behavior. `go test -run TestBurstsEveryHourAreNotPaidFor
// -v ./pkg/sim/control` logs the figures.
func TestBurstsEveryHourAreNotPaidFor(t *testing.T) {
	s, bursts := burstsEveryHour()
	m := sim.PeakModel(s, 0.7, 24)
	cfg := sim.Config{Model: m, Delay: 3, Turn: time.Minute}
	res := sim.Run(cfg, s, BarometerSetting("default", profile(t, signal.DefaultProfile), DeployedRecommended).New(m))
	hpa := sim.Run(cfg, s, NewHPA(m, DefaultHPAOptions())).Score
	w, h := DefaultFrontierGrid()
	front, ok := ScoreMaxHoldGrid(cfg, s, w, h).Frontier(res.Score.Shortfall, res.Score.Oscillation)
	sc := res.Score
	t.Logf("%d bursts over %d turns: short %d, reversals %d (the HPA's %d), total %d (ideal %d); the frontier W=%d h=%d, %d",
		len(bursts), len(s.Load), sc.Shortfall, sc.Oscillation, hpa.Oscillation, sc.Total, m.Ideal(s.Load), front.Options.Window, front.Options.Hold, front.Score.Total)
	for _, b := range bursts {
		if b+10 >= len(s.Load) {
			continue
		}
		before, after := res.Steps[b-1].Replicas, res.Steps[b+10].Replicas
		if after > before+2 {
			t.Errorf("burst at %d: %d replicas 10 minutes after, %d before", b, after, before)
		}
	}
	if ok && sc.Total > front.Score.Total {
		t.Errorf("total %d, over the frontier's %d", sc.Total, front.Score.Total)
	}
	if sc.Oscillation > hpa.Oscillation {
		t.Errorf("reversals %d, over the HPA's %d", sc.Oscillation, hpa.Oscillation)
	}
}
