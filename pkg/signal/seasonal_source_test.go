package signal

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// pointsOf is demand on the source's grid from from to to, as a source
// that holds the history yields it.
func pointsOf(demand func(time.Time) float64, from, to time.Time) []pressure.DemandPoint {
	var out []pressure.DemandPoint
	for t := from; !t.After(to); t = t.Add(pressure.SeasonStep) {
		out = append(out, pressure.DemandPoint{At: t, Demand: demand(t)})
	}
	return out
}

// sourceSeason is what a source yields at the grid instant at: the recent
// windows, and the long history when long.
func sourceSeason(demand func(time.Time) float64, at time.Time, long bool) *pressure.Season {
	var s pressure.Season
	for _, p := range []time.Duration{pressure.SeasonWeek, pressure.SeasonDay} {
		s.Recent = append(s.Recent, pointsOf(demand, at.Add(-p-pressure.SeasonSmooth), at.Add(-p+pressure.SeasonHorizon+pressure.SeasonSmooth))...)
	}
	s.Recent = append(s.Recent, pointsOf(demand, at.Add(-pressure.SeasonLevel+pressure.SeasonStep), at)...)
	if long {
		s.Long = pointsOf(demand, at.Add(-pressure.SeasonLong+pressure.SeasonStep), at)
	}
	return &s
}

func TestTheSourcesHistoryGrid(t *testing.T) {
	// The grid the sources read on is the forecast's.
	if pressure.SeasonStep != SeasonBucket || pressure.SeasonLong != time.Duration(SeasonBuckets)*SeasonBucket ||
		pressure.SeasonSmooth != seasonSmoothBuckets*SeasonBucket || pressure.SeasonLevel != seasonLevelBuckets*SeasonBucket ||
		pressure.SeasonDay != time.Duration(seasonDay)*SeasonBucket || pressure.SeasonWeek != time.Duration(seasonWeek)*SeasonBucket {
		t.Fatal("pkg/pressure's season constants and the forecast's differ")
	}
}

func TestForecastFromTheSourcesHistory(t *testing.T) {
	opts := DefaultOptions()
	opts.Forecast, opts.ReplicaStartup = ForecastOn, pressure.SeasonHorizon
	// A rising morning: six hours after midnight, an hour ahead.
	at := t0.Add(9*24*time.Hour + 6*time.Hour)
	in := func(at time.Time, season *pressure.Season) Input {
		return Input{Compute: pressure.ComputePressure{Activation: daily(at) / 20, ReplicaCount: 20}, MeasuredAt: at, Season: season}
	}

	t.Run("the source's history forecasts as the computer's own, keeping none", func(t *testing.T) {
		held := NewComputer(opts)
		sig := held.Compute(at, in(at, sourceSeason(daily, at, true)))
		own := NewComputer(opts)
		var want ScalingSignal
		for now := at.Add(-time.Duration(SeasonBuckets) * SeasonBucket); !now.After(at); now = now.Add(SeasonBucket) {
			want = own.Compute(now, in(now, nil))
		}
		// The computer's own buckets are float32.
		if sig.Forecast <= sig.RawScaleValue || math.Abs(sig.Forecast-want.Forecast) > 1e-6*want.Forecast || sig.ScaleValue != sig.Forecast {
			t.Errorf("from the source: forecast %v scale %v; the computer's own: forecast %v scale %v; raw %v", sig.Forecast, sig.ScaleValue, want.Forecast, want.ScaleValue, sig.RawScaleValue)
		}
		if held.season.hist != nil || held.season.started {
			t.Errorf("the computer kept a history of its own: %d buckets", len(held.season.hist))
		}
		// A lag past the horizon looks as far as the history reaches.
		longer := opts
		longer.ReplicaStartup = 3 * pressure.SeasonHorizon
		if far := NewComputer(longer).Compute(at, in(at, sourceSeason(daily, at, true))); far.Forecast != sig.Forecast {
			t.Errorf("over a lag of %v: forecast %v, want the horizon's %v", longer.ReplicaStartup, far.Forecast, sig.Forecast)
		}
	})

	t.Run("a weekly pattern is read a week ago", func(t *testing.T) {
		// Monday morning after a flat weekend (days 5 and 6 of t0's
		// weeks): a day ago says flat, a week ago says the rise.
		monday := t0.Add(14*24*time.Hour + 6*time.Hour)
		weekIn := func(at time.Time, season *pressure.Season) Input {
			return Input{Compute: pressure.ComputePressure{Activation: weekly(at) / 20, ReplicaCount: 20}, MeasuredAt: at, Season: season}
		}
		held := NewComputer(opts)
		sig := held.Compute(monday, weekIn(monday, sourceSeason(weekly, monday, true)))
		own := NewComputer(opts)
		var want ScalingSignal
		for now := monday.Add(-time.Duration(SeasonBuckets) * SeasonBucket); !now.After(monday); now = now.Add(SeasonBucket) {
			want = own.Compute(now, weekIn(now, nil))
		}
		if held.held.period != seasonWeek || sig.Forecast <= sig.RawScaleValue || math.Abs(sig.Forecast-want.Forecast) > 1e-6*want.Forecast {
			t.Errorf("period %d buckets, forecast %v (raw %v); the computer's own: period %d, forecast %v", held.held.period, sig.Forecast, sig.RawScaleValue, own.season.period, want.Forecast)
		}
	})

	t.Run("the period stands until the long history is two reads old", func(t *testing.T) {
		c := NewComputer(opts)
		c.Compute(at, in(at, sourceSeason(daily, at, true)))
		later := at.Add(seasonFoundFor)
		if sig := c.Compute(later, in(later, sourceSeason(daily, later, false))); sig.Forecast == 0 {
			t.Errorf("%v after the long history: no forecast", seasonFoundFor)
		}
		later = later.Add(SeasonBucket)
		if sig := c.Compute(later, in(later, sourceSeason(daily, later, false))); sig.Forecast != 0 {
			t.Errorf("%v after the long history: forecast %v from a period no longer read", later.Sub(at), sig.Forecast)
		}
	})

	t.Run("no season in the long history, no forecast", func(t *testing.T) {
		// A wave of about nine hours: neither a day's nor a week's.
		flat := func(t time.Time) float64 { return 6 + 2*math.Sin(float64(t.Unix())/5003) }
		c := NewComputer(opts)
		if sig := c.Compute(at, in(at, sourceSeason(flat, at, true))); sig.Forecast != 0 {
			t.Errorf("forecast %v from a history with no season", sig.Forecast)
		}
	})

	t.Run("allocates only the reason", func(t *testing.T) {
		c := NewComputer(opts)
		c.Compute(at, in(at, sourceSeason(daily, at, true)))
		season := sourceSeason(daily, at, false)
		now := at
		allocs := testing.AllocsPerRun(100, func() {
			now = now.Add(5 * time.Second)
			c.Compute(now, in(now, season))
		})
		if allocs > 1 {
			t.Errorf("Compute with a source's history: %v allocations, want the reason's alone", allocs)
		}
	})

	t.Run("an empty history, as a backfilled sample has", func(t *testing.T) {
		c := NewComputer(opts)
		if sig := c.Compute(at, in(at, &pressure.Season{})); sig.Forecast != 0 || c.season.started {
			t.Errorf("forecast %v, own history started %v", sig.Forecast, c.season.started)
		}
	})
}

// BenchmarkForecastFromSource is the forecast of one sample from a
// source's history: the recent windows, the period found once (the long
// history comes once an hour, BenchmarkDetectFromSource). It keeps
// nothing but the period: held-bytes is what the computer holds.
func BenchmarkForecastFromSource(b *testing.B) {
	at := t0.Add(9 * 24 * time.Hour)
	var h heldSeason
	h.detect(sourceSeason(daily, at, true).Long)
	if h.period == 0 {
		b.Fatal("no season found")
	}
	season := sourceSeason(daily, at, false)
	b.ReportAllocs()
	b.ReportMetric(float64(unsafe.Sizeof(h)), "held-bytes")
	var sink float64
	for b.Loop() {
		sink += h.forecast(season, at, 15*time.Minute)
	}
	_ = sink
}

// BenchmarkDetectFromSource finds the period in a long history from a
// source (eight days on the 5-minute grid), as the computer does once an
// hour per target; the buckets are allocated for it and dropped after.
func BenchmarkDetectFromSource(b *testing.B) {
	long := sourceSeason(daily, t0.Add(9*24*time.Hour), true).Long
	b.ReportAllocs()
	for b.Loop() {
		var h heldSeason
		h.detect(long)
	}
}
