package seasonal

import (
	"testing"
	"time"
	"unsafe"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal/seasonal/seasonaltest"
)

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
	h.detect(seasonaltest.SourceSeason(seasonaltest.Daily, at, true).Long)
	if h.period == 0 {
		b.Fatal("no season found")
	}
	season := seasonaltest.SourceSeason(seasonaltest.Daily, at, false)
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
	long := seasonaltest.SourceSeason(seasonaltest.Daily, t0.Add(9*24*time.Hour), true).Long
	b.ReportAllocs()
	for b.Loop() {
		var h Held
		h.detect(long)
	}
}
