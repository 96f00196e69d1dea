package signal

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// daily is a demand with a daily wave: 10 replicas of work at midday, 4 at
// midnight.
func daily(t time.Time) float64 {
	h := float64(t.Sub(t0)) / float64(24*time.Hour)
	return 7 - 3*math.Cos(2*math.Pi*h)
}

// weekly is the daily wave on five days of seven and a flat 3 on the other
// two, so days one apart differ where days one week apart do not.
func weekly(t time.Time) float64 {
	if int(t.Sub(t0)/(24*time.Hour))%7 >= 5 {
		return 3
	}
	return daily(t)
}

// feed folds demand(t) plus noise of the given width into a fresh
// forecaster for span at one sample per step.
func feed(demand func(time.Time) float64, noise float64, span, step time.Duration) *seasonal {
	var s seasonal
	r := rng{s: 7}
	for d := time.Duration(0); d < span; d += step {
		now := t0.Add(d)
		s.observe(now, max(0, demand(now)+noise*(2*r.next()-1)))
	}
	return &s
}

func TestSeasonDetection(t *testing.T) {
	flat := func(time.Time) float64 { return 6 }
	tests := []struct {
		name   string
		demand func(time.Time) float64
		noise  float64
		span   time.Duration
		step   time.Duration
		want   int
	}{
		{"a daily wave with noise, three days", daily, 2, 72 * time.Hour, time.Minute, seasonDay},
		{"a daily wave read every 30 minutes", daily, 2, 72 * time.Hour, 30 * time.Minute, seasonDay},
		{"a weekly pattern, nine days", weekly, 1, 9 * 24 * time.Hour, 5 * time.Minute, seasonWeek},
		{"a weekly pattern, a week: only the day is read", weekly, 1, 7 * 24 * time.Hour, 5 * time.Minute, seasonDay},
		{"noise alone, nine days", flat, 4, 9 * 24 * time.Hour, 5 * time.Minute, 0},
		{"a daily wave, one day: too short", daily, 0, 24 * time.Hour, time.Minute, 0},
		{"a daily wave with noise wider than it", daily, 30, 9 * 24 * time.Hour, 5 * time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := feed(tt.demand, tt.noise, tt.span, tt.step)
			if s.period != tt.want {
				t.Errorf("period %d buckets, want %d (autocorrelation at a day %.2f, at a week %.2f)",
					s.period, tt.want, s.autocorrelation(seasonDay), s.autocorrelation(seasonWeek))
			}
			if tt.want == 0 && s.forecast(15*time.Minute) != 0 {
				t.Errorf("forecast %v with no season, want 0", s.forecast(15*time.Minute))
			}
		})
	}
}

// TestSeasonalForecastScalesToTheLevel: a week whose wave runs at twice
// yesterday's level is forecast at twice yesterday's demand, the time the
// lag ahead.
func TestSeasonalForecastScalesToTheLevel(t *testing.T) {
	doubled := func(t time.Time) float64 {
		if t.Sub(t0) >= 72*time.Hour {
			return 2 * daily(t)
		}
		return daily(t)
	}
	s := feed(doubled, 0, 78*time.Hour, time.Minute) // to 06:00 of day 4
	lag := 2 * time.Hour
	got := s.forecast(lag)
	// The 65-minute mean of yesterday's wave around 08:00, doubled.
	want := 2 * daily(t0.Add(8*time.Hour))
	if math.Abs(got-want) > 0.02*want {
		t.Errorf("forecast %.3f, want about %.3f", got, want)
	}
}

// TestSeasonalHistoryGaps: a gap of up to an hour is interpolated; a longer
// one leaves its buckets empty, and a history that ends in an empty bucket
// one period ago forecasts nothing.
func TestSeasonalHistoryGaps(t *testing.T) {
	var s seasonal
	s.observe(t0, 2)
	s.observe(t0.Add(time.Hour), 8)
	b := bucketOf(t0)
	for i := int64(1); i < 12; i++ {
		want := 2 + 6*float64(i)/12
		if got := s.at(b + i); math.Abs(got-want) > 1e-4 {
			t.Fatalf("bucket %d: %v, want %v", i, got, want)
		}
	}
	s.observe(t0.Add(3*time.Hour), 5)
	for i := int64(13); i < 36; i++ {
		if got := s.at(b + i); !math.IsNaN(got) {
			t.Fatalf("bucket %d after a 2-hour gap: %v, want empty", i, got)
		}
	}
	if got := s.at(b + 36); got != 5 {
		t.Errorf("the filling bucket: %v, want 5", got)
	}
	// The same data seen again moves nothing.
	s.observe(t0.Add(3*time.Hour), 500)
	if got := s.at(b + 36); got != 5 {
		t.Errorf("data seen again: %v, want 5", got)
	}
}

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
	if c.season.hist != nil {
		t.Errorf("history of %d buckets with the forecast off", len(c.season.hist))
	}
}

// TestHistoryGrowsAsBucketsClose: the history holds the buckets closed
// so far, and the whole ring only once eight days have passed; a ring
// that wrapped forecasts what one filled in a single go does.
func TestHistoryGrowsAsBucketsClose(t *testing.T) {
	hour := feed(daily, 0, time.Hour, time.Minute)
	if n := cap(hour.hist); n > 16 {
		t.Errorf("an hour of samples: ring of %d buckets, want at most 16", n)
	}
	full := feed(daily, 2, 10*24*time.Hour, time.Minute)
	if n := cap(full.hist); n != SeasonBuckets {
		t.Errorf("ten days of samples: ring of %d buckets, want %d", n, SeasonBuckets)
	}
	if full.period == 0 {
		t.Error("ten days of a daily season: no season found")
	}
	if f := full.forecast(0); math.Abs(f-daily(full.last)) > 0.2*daily(full.last)+1 {
		t.Errorf("forecast %v, the demand then %v", f, daily(full.last))
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
