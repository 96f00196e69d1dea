package control

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/sim"

	"github.com/barometer-scaler/barometer/pkg/signal"
)

// underTurns is the under-provisioned replica-turns of a run: the sum over
// its turns of the replicas required and not ready.
func underTurns(r sim.Result) int {
	u := 0
	for _, st := range r.Steps {
		u += max(0, st.Required-st.Ready)
	}
	return u
}

// TestForecastOnRealTraces scores the budgeted profile with the seasonal
// forecast off and on, deployed through KEDA and the HPA (scale-down
// stabilization 0, as the README recommends, and Kubernetes' default), at
// metric delay 3 on every real trace (peak at 24 replicas). Where the
// forecast finds no season (every trace shorter than two days, and the
// load balancer's two weeks) the runs are the same; on the taxi series'
// strong weekly cycle it must halve the under-provisioned replica-turns
// at no more cost; on NASA's four weeks, whose cycle is weaker than its
// noise, it must cost nothing. `go test -run
// TestForecastOnRealTraces -v ./pkg/sim/control` logs the figures.
func TestForecastOnRealTraces(t *testing.T) {
	behaviors := []struct {
		name string
		opts HPAOptions
	}{{"scaleDown stabilization 0", RecommendedHPAOptions()}, {"Kubernetes default", DefaultHPAOptions()}}
	for _, rt := range sim.RealTraces() {
		s, err := rt.Load()
		if err != nil {
			t.Fatal(err)
		}
		m := sim.PeakModel(s, 0.7, 24)
		cfg := sim.Config{Model: m, Delay: 3, Turn: rt.Step}
		for _, hpa := range behaviors {
			var runs [2]sim.Result
			for i, mode := range []signal.ForecastMode{signal.ForecastOff, signal.ForecastOn} {
				b, err := ProfileBarometerOptions(signal.ProfileBudgeted)
				if err != nil {
					t.Fatal(err)
				}
				b.Signal.Forecast = mode
				runs[i] = sim.Run(cfg, s, NewDeployed(m, NewBarometer(m, b), m.Target, hpa.opts))
				sc := runs[i].Score
				t.Logf("%-38s %-26s forecast %-3s under %5d  short %4d (%4.1f %%)  total %6d  reversals %4d",
					rt.File, hpa.name, mode, underTurns(runs[i]), sc.Shortfall, 100*float64(sc.Shortfall)/float64(rt.Turns), sc.Total, sc.Oscillation)
			}
			off, on := runs[0], runs[1]
			switch rt.File {
			case "nab-nyc-taxi-2014-09-01-10-26-30m.csv":
				// A strong weekly cycle: the forecast earns its place.
				if 2*underTurns(on) > underTurns(off) || on.Score.Total > off.Score.Total {
					t.Errorf("%s, %s: under %d, total %d with the forecast; %d, %d without: want at most half the under-provisioning at no more cost",
						rt.File, hpa.name, underTurns(on), on.Score.Total, underTurns(off), off.Score.Total)
				}
			case "nasa-http-1995-08-04-31-5m.csv":
				// A cycle weaker than its noise: the forecast must cost
				// nothing (shortfall within 3 % of the turns, total within
				// 1 %, no more reversals).
				if 100*on.Score.Shortfall > 3*rt.Turns || float64(on.Score.Total) > 1.01*float64(off.Score.Total) || on.Score.Oscillation > off.Score.Oscillation {
					t.Errorf("%s, %s: with the forecast %+v, without %+v", rt.File, hpa.name, on.Score, off.Score)
				}
			default:
				if off.Score != on.Score {
					t.Errorf("%s, %s: no season, yet the forecast changed the score: off %+v, on %+v", rt.File, hpa.name, off.Score, on.Score)
				}
			}
		}
	}
}

// windowsAsked is a SeasonHistory that records the windows read from it.
type windowsAsked struct{ windows []pressure.SeasonWindow }

func (w *windowsAsked) Window(sw pressure.SeasonWindow) []pressure.DemandPoint {
	w.windows = append(w.windows, sw)
	return []pressure.DemandPoint{{At: sw.End, Demand: 1}}
}

// TestHeldHistoryReadsNoFurtherThanTheData: a history held by the source
// is read as the prometheus source reads it: the recent windows once per
// grid step, the long history once an hour, and never past the instant
// the delivered sample's data was measured (a backtest's Prometheus holds
// the turns the metric delay has not delivered yet).
func TestHeldHistoryReadsNoFurtherThanTheData(t *testing.T) {
	var h heldHistory
	from := &windowsAsked{}
	longs := 0
	for turn := range 240 { // an hour of 15 s turns, from 00:00:00
		measuredAt := sim.Epoch.Add(time.Duration(turn) * 15 * time.Second)
		s := h.read(from, measuredAt)
		if s.Long != nil {
			longs++
		}
		for _, w := range from.windows {
			if w.End.After(measuredAt) {
				t.Fatalf("at %v a window ending %v was read", measuredAt, w.End)
			}
		}
		if len(s.Recent) != 3 {
			t.Fatalf("%d recent points, want one of each of the three windows", len(s.Recent))
		}
	}
	if steps := 60 / 5; len(from.windows) != 3*steps+1 {
		t.Errorf("%d windows read in an hour: want the three recent ones at each of %d steps and the long history once", len(from.windows), steps)
	}
	if longs != 1 {
		t.Errorf("the long history came %d times in an hour, want once", longs)
	}
}
