package signal

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal/seasonal"
	"github.com/barometer-scaler/barometer/pkg/signal/seasonal/seasonaltest"
)

// The seasonal forecast as the computer runs it; the forecast itself is
// tested in pkg/signal/seasonal.

func budgetedWith(t testing.TB, mode ForecastMode) Options {
	t.Helper()
	o, err := ProfileOptions(ProfileBudgeted)
	if err != nil {
		t.Fatal(err)
	}
	o.SurgeTarget, o.Forecast = 0.7, mode
	return o
}

// rush is a daily rise: 2 replicas of work, 12 from 08:00 to 18:00.
func rush(t time.Time) float64 {
	if h := t.Sub(t0) % (24 * time.Hour); h >= 8*time.Hour && h < 18*time.Hour {
		return 12
	}
	return 2
}

// driveDays folds days of rush at one sample a minute, each measured 10
// minutes before it was folded across 20 replicas, into computers with
// the forecast off, on and only, and calls check with each sample's three
// signals.
func driveDays(t *testing.T, days int, check func(now time.Time, off, on, only ScalingSignal)) {
	t.Helper()
	off := NewComputer(budgetedWith(t, ForecastOff))
	on := NewComputer(budgetedWith(t, ForecastOn))
	only := NewComputer(budgetedWith(t, ForecastOnly))
	for d := time.Duration(0); d < time.Duration(days)*24*time.Hour; d += time.Minute {
		now := t0.Add(d)
		measured := now.Add(-10 * time.Minute)
		in := Input{Compute: pressure.ComputePressure{Resource: rush(measured) / 20, ReplicaCount: 20}, MeasuredAt: measured}
		check(now, off.Compute(now, in), on.Compute(now, in), only.Compute(now, in))
	}
}

// TestForecastLeadsARiseAndNeverLowers: from the third day the forecast
// raises the value in the 10 minutes before the 08:00 rise reaches the
// samples, so the pool is asked to grow ahead of it (the window one period
// ago the forecast reads is an hour wide, so a step is led as a ramp:
// at least halfway up from 08:00); at no sample is the value below the
// one the same computer publishes with the forecast off, and whenever it
// is above, the reason says why.
func TestForecastLeadsARiseAndNeverLowers(t *testing.T) {
	driveDays(t, 4, func(now time.Time, off, on, _ ScalingSignal) {
		if on.ScaleValue < off.ScaleValue {
			t.Fatalf("%v: value %v with the forecast on, below %v with it off", now, on.ScaleValue, off.ScaleValue)
		}
		// Above it, the forecast raised this sample or the churn budget
		// holds what it raised before.
		if on.ScaleValue > off.ScaleValue && !strings.Contains(on.Reason, "; forecast +") && !strings.Contains(on.Reason, "held by churn budget") {
			t.Fatalf("%v: value %v (off %v), reason %q", now, on.ScaleValue, off.ScaleValue, on.Reason)
		}
		h := now.Sub(t0) % (24 * time.Hour)
		if now.Sub(t0) < 48*time.Hour || h < 7*time.Hour+55*time.Minute || h >= 8*time.Hour+10*time.Minute {
			return
		}
		if on.ScaleValue <= off.ScaleValue {
			t.Errorf("%v: value %.2f ahead of the rise, no more than %.2f with the forecast off", now, on.ScaleValue, off.ScaleValue)
		}
		if h >= 8*time.Hour && on.ScaleValue < 7 {
			t.Errorf("%v: value %.2f as the rise begins, want at least 7 (halfway from 2 to 12)", now, on.ScaleValue)
		}
	})
}

// TestForecastOnlyPublishesWithoutActing: in forecast-only mode the signal
// carries the forecast and is otherwise the one with the forecast off.
func TestForecastOnlyPublishesWithoutActing(t *testing.T) {
	var published int
	driveDays(t, 3, func(now time.Time, off, on, only ScalingSignal) {
		if only.ScaleValue != off.ScaleValue || only.Reason != off.Reason {
			t.Fatalf("%v: only %v %q, off %v %q", now, only.ScaleValue, only.Reason, off.ScaleValue, off.Reason)
		}
		if off.Forecast != 0 {
			t.Fatalf("%v: forecast %v with the forecast off", now, off.Forecast)
		}
		if only.Forecast != on.Forecast {
			t.Fatalf("%v: forecast %v in only, %v in on", now, only.Forecast, on.Forecast)
		}
		if only.Forecast > 0 {
			published++
		}
	})
	if published == 0 {
		t.Error("forecast-only never published a forecast")
	}
}

// TestForecastOffHoldsNoHistory: the history is allocated only when the
// forecast is on.
func TestForecastOffHoldsNoHistory(t *testing.T) {
	c := NewComputer(budgetedWith(t, ForecastOff))
	c.Compute(t0, in(0.5, 4))
	if c.season.Len() != 0 {
		t.Errorf("history of %d buckets with the forecast off", c.season.Len())
	}
}

// TestComputeWithForecastAllocatesOnlyTheReason: once its history is
// allocated, the forecast adds no allocation to a sample.
func TestComputeWithForecastAllocatesOnlyTheReason(t *testing.T) {
	c := NewComputer(budgetedWith(t, ForecastOn))
	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		now := t0.Add(time.Duration(i) * time.Minute)
		measured := now.Add(-10 * time.Minute)
		c.Compute(now, Input{Compute: pressure.ComputePressure{Resource: rush(measured) / 20, ReplicaCount: 20}, MeasuredAt: measured})
		i++
	})
	if allocs > 1 {
		t.Errorf("%v allocations per sample, want 1", allocs)
	}
}

// demandInput is a sample of demand at at over 20 replicas, with the
// source's history when season is not nil.
func demandInput(demand func(time.Time) float64, at time.Time, season *pressure.Season) Input {
	return Input{Compute: pressure.ComputePressure{Activation: demand(at) / 20, ReplicaCount: 20}, MeasuredAt: at, Season: season}
}

// forecastBothWays computes the signal at at for demand both ways: held
// reads the source's history once, own keeps its own over the history's
// whole span, sample by sample.
func forecastBothWays(opts Options, demand func(time.Time) float64, at time.Time) (held, own *Computer, sig, want ScalingSignal) {
	held = NewComputer(opts)
	sig = held.Compute(at, demandInput(demand, at, seasonaltest.SourceSeason(demand, at, true)))
	own = NewComputer(opts)
	for now := at.Add(-time.Duration(seasonal.Buckets) * seasonal.Bucket); !now.After(at); now = now.Add(seasonal.Bucket) {
		want = own.Compute(now, demandInput(demand, now, nil))
	}
	return held, own, sig, want
}

func TestForecastFromTheSourcesHistory(t *testing.T) {
	opts := DefaultOptions()
	opts.Forecast, opts.ReplicaStartup = ForecastOn, pressure.SeasonHorizon
	// A rising morning: six hours after midnight, an hour ahead.
	at := t0.Add(9*24*time.Hour + 6*time.Hour)
	in := func(at time.Time, season *pressure.Season) Input { return demandInput(seasonaltest.Daily, at, season) }

	t.Run("the source's history forecasts as the computer's own, keeping none", func(t *testing.T) {
		held, _, sig, want := forecastBothWays(opts, seasonaltest.Daily, at)
		// The computer's own buckets are float32.
		if sig.Forecast <= sig.RawScaleValue || math.Abs(sig.Forecast-want.Forecast) > 1e-6*want.Forecast || sig.ScaleValue != sig.Forecast {
			t.Errorf("from the source: forecast %v scale %v; the computer's own: forecast %v scale %v; raw %v", sig.Forecast, sig.ScaleValue, want.Forecast, want.ScaleValue, sig.RawScaleValue)
		}
		if held.season.Len() != 0 || !held.season.Empty() {
			t.Errorf("the computer kept a history of its own: %d buckets", held.season.Len())
		}
		// A lag past the horizon looks as far as the history reaches.
		longer := opts
		longer.ReplicaStartup = 3 * pressure.SeasonHorizon
		if far := NewComputer(longer).Compute(at, in(at, seasonaltest.SourceSeason(seasonaltest.Daily, at, true))); far.Forecast != sig.Forecast {
			t.Errorf("over a lag of %v: forecast %v, want the horizon's %v", longer.ReplicaStartup, far.Forecast, sig.Forecast)
		}
	})

	t.Run("a weekly pattern is read a week ago", func(t *testing.T) {
		// Monday morning after a flat weekend (days 5 and 6 of t0's
		// weeks): a day ago says flat, a week ago says the rise.
		monday := t0.Add(14*24*time.Hour + 6*time.Hour)
		held, own, sig, want := forecastBothWays(opts, seasonaltest.Weekly, monday)
		if held.held.Period() != 7*24*time.Hour || sig.Forecast <= sig.RawScaleValue || math.Abs(sig.Forecast-want.Forecast) > 1e-6*want.Forecast {
			t.Errorf("period %v, forecast %v (raw %v); the computer's own: period %v, forecast %v", held.held.Period(), sig.Forecast, sig.RawScaleValue, own.season.Period(), want.Forecast)
		}
	})

	t.Run("the period stands until the long history is two reads old", func(t *testing.T) {
		c := NewComputer(opts)
		c.Compute(at, in(at, seasonaltest.SourceSeason(seasonaltest.Daily, at, true)))
		later := at.Add(seasonal.PeriodStands)
		if sig := c.Compute(later, in(later, seasonaltest.SourceSeason(seasonaltest.Daily, later, false))); sig.Forecast == 0 {
			t.Errorf("%v after the long history: no forecast", seasonal.PeriodStands)
		}
		later = later.Add(seasonal.Bucket)
		if sig := c.Compute(later, in(later, seasonaltest.SourceSeason(seasonaltest.Daily, later, false))); sig.Forecast != 0 {
			t.Errorf("%v after the long history: forecast %v from a period no longer read", later.Sub(at), sig.Forecast)
		}
	})

	t.Run("no season in the long history, no forecast", func(t *testing.T) {
		// A wave of about nine hours: neither a day's nor a week's.
		flat := func(t time.Time) float64 { return 6 + 2*math.Sin(float64(t.Unix())/5003) }
		c := NewComputer(opts)
		if sig := c.Compute(at, in(at, seasonaltest.SourceSeason(flat, at, true))); sig.Forecast != 0 {
			t.Errorf("forecast %v from a history with no season", sig.Forecast)
		}
	})

	t.Run("allocates only the reason", func(t *testing.T) {
		c := NewComputer(opts)
		c.Compute(at, in(at, seasonaltest.SourceSeason(seasonaltest.Daily, at, true)))
		season := seasonaltest.SourceSeason(seasonaltest.Daily, at, false)
		now := at
		allocs := testing.AllocsPerRun(100, func() {
			now = now.Add(5 * time.Second)
			c.Compute(now, in(now, season))
		})
		if allocs > 1 {
			t.Errorf("Compute with a source's history: %v allocations, want the reason's alone", allocs)
		}
	})

	t.Run("says when it has no history yet", func(t *testing.T) {
		// The recent windows come before the long history does (a
		// source reads its long history at a phase of its own, within
		// its first hour): no forecast, for want of history.
		c := NewComputer(opts)
		if sig := c.Compute(at, in(at, seasonaltest.SourceSeason(seasonaltest.Daily, at, false))); sig.Forecast != 0 || !sig.ForecastHistoryPending {
			t.Errorf("before the long history: forecast %v, pending %t; want 0, pending", sig.Forecast, sig.ForecastHistoryPending)
		}
		later := at.Add(seasonal.Bucket)
		if sig := c.Compute(later, in(later, seasonaltest.SourceSeason(seasonaltest.Daily, later, true))); sig.Forecast == 0 || sig.ForecastHistoryPending {
			t.Errorf("with the long history: forecast %v, pending %t; want a forecast", sig.Forecast, sig.ForecastHistoryPending)
		}
		// A computer keeping its own history is never waiting for one.
		if sig := NewComputer(opts).Compute(at, in(at, nil)); sig.ForecastHistoryPending {
			t.Error("the computer's own history: pending")
		}
	})

	t.Run("an empty history, as a backfilled sample has", func(t *testing.T) {
		c := NewComputer(opts)
		if sig := c.Compute(at, in(at, &pressure.Season{})); sig.Forecast != 0 || !c.season.Empty() {
			t.Errorf("forecast %v, own history started %v", sig.Forecast, !c.season.Empty())
		}
	})
}
