package seasonal

import (
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
	if pressure.SeasonStep != Bucket || pressure.SeasonLong != time.Duration(Buckets)*Bucket ||
		pressure.SeasonSmooth != smoothBuckets*Bucket || pressure.SeasonLevel != levelBuckets*Bucket ||
		pressure.SeasonDay != time.Duration(day)*Bucket || pressure.SeasonWeek != time.Duration(week)*Bucket {
		t.Fatal("pkg/pressure's season constants and the forecast's differ")
	}
}

// BenchmarkForecastFromSource is the forecast of one sample from a
// source's history: the recent windows, the period found once (the long
// history comes once an hour, BenchmarkDetectFromSource). It keeps
// nothing but the period: held-bytes is what the computer holds.
func BenchmarkForecastFromSource(b *testing.B) {
	at := t0.Add(9 * 24 * time.Hour)
	var h Held
	h.detect(sourceSeason(daily, at, true).Long)
	if h.period == 0 {
		b.Fatal("no season found")
	}
	season := sourceSeason(daily, at, false)
	b.ReportAllocs()
	b.ReportMetric(float64(unsafe.Sizeof(h)), "held-bytes")
	var sink float64
	for b.Loop() {
		sink += h.Forecast(season, at, 15*time.Minute)
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
		var h Held
		h.detect(long)
	}
}
