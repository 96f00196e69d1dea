package seasonal

import (
	"math"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/signal/seasonal/seasonaltest"
)

var t0 = seasonaltest.Start

// rng is a small deterministic generator (Park-Miller), so the noisy
// series below are the same on every run.
type rng struct{ s int64 }

func (r *rng) next() float64 {
	r.s = r.s * 48271 % 2147483647
	return float64(r.s) / 2147483647
}

// feed folds demand(t) plus noise of the given width into a fresh
// forecaster for span at one sample per step.
func feed(demand func(time.Time) float64, noise float64, span, step time.Duration) *Memory {
	var s Memory
	r := rng{s: 7}
	for d := time.Duration(0); d < span; d += step {
		now := t0.Add(d)
		s.Observe(now, max(0, demand(now)+noise*(2*r.next()-1)))
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
		{"a daily wave with noise, three days", seasonaltest.Daily, 2, 72 * time.Hour, time.Minute, day},
		{"a daily wave read every 30 minutes", seasonaltest.Daily, 2, 72 * time.Hour, 30 * time.Minute, day},
		{"a weekly pattern, nine days", seasonaltest.Weekly, 1, 9 * 24 * time.Hour, 5 * time.Minute, week},
		{"a weekly pattern, a week: only the day is read", seasonaltest.Weekly, 1, 7 * 24 * time.Hour, 5 * time.Minute, day},
		{"noise alone, nine days", flat, 4, 9 * 24 * time.Hour, 5 * time.Minute, 0},
		{"a daily wave, one day: too short", seasonaltest.Daily, 0, 24 * time.Hour, time.Minute, 0},
		{"a daily wave with noise wider than it", seasonaltest.Daily, 30, 9 * 24 * time.Hour, 5 * time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := feed(tt.demand, tt.noise, tt.span, tt.step)
			if s.period != tt.want {
				t.Errorf("period %d buckets, want %d (autocorrelation at a day %.2f, at a week %.2f)",
					s.period, tt.want, s.autocorrelation(day), s.autocorrelation(week))
			}
			if tt.want == 0 && s.Forecast(15*time.Minute) != 0 {
				t.Errorf("forecast %v with no season, want 0", s.Forecast(15*time.Minute))
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
			return 2 * seasonaltest.Daily(t)
		}
		return seasonaltest.Daily(t)
	}
	s := feed(doubled, 0, 78*time.Hour, time.Minute) // to 06:00 of day 4
	lag := 2 * time.Hour
	got := s.Forecast(lag)
	// The 65-minute mean of yesterday's wave around 08:00, doubled.
	want := 2 * seasonaltest.Daily(t0.Add(8*time.Hour))
	if math.Abs(got-want) > 0.02*want {
		t.Errorf("forecast %.3f, want about %.3f", got, want)
	}
}

// TestSeasonalHistoryGaps: a gap of up to an hour is interpolated; a longer
// one leaves its buckets empty, and a history that ends in an empty bucket
// one period ago forecasts nothing.
func TestSeasonalHistoryGaps(t *testing.T) {
	var s Memory
	s.Observe(t0, 2)
	s.Observe(t0.Add(time.Hour), 8)
	b := bucketOf(t0)
	for i := int64(1); i < 12; i++ {
		want := 2 + 6*float64(i)/12
		if got := s.at(b + i); math.Abs(got-want) > 1e-4 {
			t.Fatalf("bucket %d: %v, want %v", i, got, want)
		}
	}
	s.Observe(t0.Add(3*time.Hour), 5)
	for i := int64(13); i < 36; i++ {
		if got := s.at(b + i); !math.IsNaN(got) {
			t.Fatalf("bucket %d after a 2-hour gap: %v, want empty", i, got)
		}
	}
	if got := s.at(b + 36); got != 5 {
		t.Errorf("the filling bucket: %v, want 5", got)
	}
	// The same data seen again moves nothing.
	s.Observe(t0.Add(3*time.Hour), 500)
	if got := s.at(b + 36); got != 5 {
		t.Errorf("data seen again: %v, want 5", got)
	}
}

// TestHistoryGrowsAsBucketsClose: the history holds the buckets closed
// so far, and the whole ring only once eight days have passed; a ring
// that wrapped forecasts what one filled in a single go does.
func TestHistoryGrowsAsBucketsClose(t *testing.T) {
	hour := feed(seasonaltest.Daily, 0, time.Hour, time.Minute)
	if n := cap(hour.hist); n > 16 {
		t.Errorf("an hour of samples: ring of %d buckets, want at most 16", n)
	}
	full := feed(seasonaltest.Daily, 2, 10*24*time.Hour, time.Minute)
	if n := cap(full.hist); n != Buckets {
		t.Errorf("ten days of samples: ring of %d buckets, want %d", n, Buckets)
	}
	if full.period == 0 {
		t.Error("ten days of a daily season: no season found")
	}
	if f := full.Forecast(0); math.Abs(f-seasonaltest.Daily(full.last)) > 0.2*seasonaltest.Daily(full.last)+1 {
		t.Errorf("forecast %v, the demand then %v", f, seasonaltest.Daily(full.last))
	}
}

// BenchmarkForecast is the seasonal forecast's cost per sample at a 5 s
// interval over a full eight-day history with a season: each sample folds
// into its bucket and reads the forecast; each bucket's close (one sample
// in 60) tests the history for a day and a week. The history is
// Buckets float32 (9,216 bytes per target once eight days are held), filled before the
// timer starts.
func BenchmarkForecast(b *testing.B) {
	s := feed(seasonaltest.Daily, 2, time.Duration(Buckets)*Bucket, time.Minute)
	if s.period == 0 {
		b.Fatal("no season found")
	}
	now := s.last
	b.ReportAllocs()
	b.ReportMetric(float64(len(s.hist)*4), "history-bytes")
	var sink float64
	for b.Loop() {
		now = now.Add(5 * time.Second)
		s.Observe(now, seasonaltest.Daily(now))
		sink += s.Forecast(15 * time.Minute)
	}
	_ = sink
}
