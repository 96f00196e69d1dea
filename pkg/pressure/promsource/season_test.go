package promsource_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/barometer-scaler/barometer/internal/promtest"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// The history: four replicas whose working set reads 0.2 (of a target of
// 100) all day but from 12:00 to 14:00, when it reads 0.8, for nine days
// before the test's day (job daily); and four whose working set wanders
// with no cycle (job flat). Written as blocks before the server starts.
const (
	histReplicas = 4
	histTarget   = 100
)

func dailyPressure(t time.Time) float64 {
	h := t.Sub(t.Truncate(24 * time.Hour))
	p := 0.2
	if h >= 12*time.Hour && h < 14*time.Hour {
		p = 0.8
	}
	// A little noise, the same for every replica.
	return p + 0.02*math.Sin(float64(t.Unix())/97)
}

func flatPressure(t time.Time) float64 {
	// Two incommensurate waves, neither of a day or a week.
	s := float64(t.Unix())
	return 0.5 + 0.2*math.Sin(s/5003) + 0.1*math.Sin(s/1777)
}

// historyText is the OpenMetrics text of both jobs from start to end, a
// sample a minute.
func historyText(start, end time.Time) string {
	var b strings.Builder
	b.WriteString("# TYPE barometer_activations gauge\n")
	for _, job := range []struct {
		name     string
		pressure func(time.Time) float64
	}{{"daily", dailyPressure}, {"flat", flatPressure}} {
		for i := range histReplicas {
			for t := start; !t.After(end); t = t.Add(time.Minute) {
				fmt.Fprintf(&b, "barometer_activations{job=%q,pod=\"%s-%d\"} %.3f %d\n", job.name, job.name, i, histTarget*job.pressure(t), t.Unix())
			}
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// seasonFixture is one Prometheus holding the history, and the day the
// test evaluates in (the last of the history).
type seasonFixture struct {
	prom *promtest.Server
	day  time.Time
}

func startSeasonFixture(t *testing.T) seasonFixture {
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-2 * 24 * time.Hour)
	hist := historyText(day.Add(-9*24*time.Hour), day.Add(16*time.Hour))
	start := time.Now()
	prom := promtest.Start(t, nil, promtest.Options{History: hist})
	t.Logf("prometheus up with %d days of history after %v", 9, time.Since(start).Round(time.Millisecond))
	return seasonFixture{prom: prom, day: day}
}

func (f seasonFixture) source(t *testing.T, job string, pool *querypool.Pool) *promsource.Source {
	src, err := promsource.New(promsource.Options{
		ServerAddress: f.prom.URL,
		Queries:       promsource.Queries{Activation: fmt.Sprintf("barometer_activations{job=%q}", job)},
		Pool:          pool,
	})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

var histCompute = pressure.ComputeCollector{ActivationWorkingSetTarget: histTarget}

// sample is what a sampler does at the instant at: the observation and the
// history, folded by a computer with the given forecast mode.
func sample(t *testing.T, src *promsource.Source, c *signal.Computer, at time.Time) signal.ScalingSignal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obs, err := src.ObserveAt(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	season, err := src.ObserveSeason(ctx, at, histCompute)
	if err != nil {
		t.Fatal(err)
	}
	return c.Compute(at, signal.Input{Compute: histCompute.Collect(obs), MeasuredAt: at, Season: &season})
}

// coldStartUntil samples a new source every minute from a cold start 75
// minutes before at up to at: the source reads its history at its own
// phase within the first hour, a window a sample (the long history's
// eight, the recent windows' three perhaps before them), so by at the
// computer holds it.
func coldStartUntil(t *testing.T, src *promsource.Source, c *signal.Computer, at time.Time) signal.ScalingSignal {
	t.Helper()
	var sig signal.ScalingSignal
	for k := time.Duration(75); k >= 0; k-- {
		sig = sample(t, src, c, at.Add(-k*time.Minute))
	}
	return sig
}

// forecastOptions is the original profile (no lead, no budget) with the
// forecast in mode, over a lag of 20 minutes.
func forecastOptions(mode signal.ForecastMode) signal.Options {
	o := signal.DefaultOptions()
	o.Forecast = mode
	o.ReplicaStartup = 20 * time.Minute
	return o
}

// ownForecast is the forecast of a computer that kept its own history of
// the same demand, sampled every minute for eight days up to at.
func ownForecast(at time.Time, pressureAt func(time.Time) float64) float64 {
	c := signal.NewComputer(forecastOptions(signal.ForecastOnly))
	var sig signal.ScalingSignal
	for t := at.Add(-pressure.SeasonLong); !t.After(at); t = t.Add(time.Minute) {
		sig = c.Compute(t, signal.Input{Compute: pressure.ComputePressure{Activation: pressureAt(t), ReplicaCount: histReplicas}, MeasuredAt: t})
	}
	return sig.Forecast
}

func TestSeasonalForecastFromPrometheus(t *testing.T) {
	f := startSeasonFixture(t)
	pool := querypool.New(0)
	reg := prometheus.NewRegistry()
	reg.MustRegister(pool)
	beforeRise := f.day.Add(11*time.Hour + 50*time.Minute)
	atPeak := f.day.Add(13*time.Hour + 50*time.Minute)

	t.Run("raises the signal ahead of a rise seen a day and a week ago", func(t *testing.T) {
		on := coldStartUntil(t, f.source(t, "daily", pool), signal.NewComputer(forecastOptions(signal.ForecastOn)), beforeRise)
		off := coldStartUntil(t, f.source(t, "daily", pool), signal.NewComputer(forecastOptions(signal.ForecastOff)), beforeRise)
		// Now: 0.2 across 4 replicas. 20 minutes on, a period ago, the
		// rise to 0.8 had begun: the window of 12:10 +- 30 minutes holds
		// 9 buckets at 3.2 and 4 at 0.8, at the same level as now.
		if off.ScaleValue > 1 || on.Forecast < 2.2 || on.Forecast > 2.7 || on.ScaleValue != on.Forecast {
			t.Fatalf("forecast on: scale %.2f forecast %.2f; off: scale %.2f; want the scale raised to a forecast of about 2.46 from about 0.8", on.ScaleValue, on.Forecast, off.ScaleValue)
		}
		t.Logf("before the rise: raw %.2f, forecast %.2f, scale %.2f (off: %.2f); %s", on.RawScaleValue, on.Forecast, on.ScaleValue, off.ScaleValue, on.Reason)
		if !strings.Contains(on.Reason, "; forecast +") {
			t.Errorf("reason %q does not name the forecast", on.Reason)
		}
		// The same forecast a computer keeping its own history of the
		// same demand makes (its buckets are means of a minute's
		// samples, the source's the value at each grid instant).
		own := ownForecast(beforeRise, dailyPressure)
		t.Logf("the computer's own history forecasts %.3f", own)
		if math.Abs(own-on.Forecast) > 0.1*own {
			t.Errorf("forecast from Prometheus %.3f, from the computer's own history %.3f", on.Forecast, own)
		}
	})

	t.Run("never lowers the signal below the measurement", func(t *testing.T) {
		on := coldStartUntil(t, f.source(t, "daily", pool), signal.NewComputer(forecastOptions(signal.ForecastOn)), atPeak)
		off := coldStartUntil(t, f.source(t, "daily", pool), signal.NewComputer(forecastOptions(signal.ForecastOff)), atPeak)
		t.Logf("at the peak: raw %.2f, forecast %.2f, scale %.2f (off: %.2f)", on.RawScaleValue, on.Forecast, on.ScaleValue, off.ScaleValue)
		// At the peak, 20 minutes on a period ago it had ended: the
		// forecast is below what the measurement asks.
		if on.Forecast <= 0 || on.Forecast >= on.RawScaleValue || on.ScaleValue != off.ScaleValue {
			t.Fatalf("at the peak: forecast %.2f, raw %.2f, scale %.2f with the forecast and %.2f without; want a lower forecast that changes nothing", on.Forecast, on.RawScaleValue, on.ScaleValue, off.ScaleValue)
		}
	})

	t.Run("forecast-only publishes the forecast without acting on it", func(t *testing.T) {
		only := coldStartUntil(t, f.source(t, "daily", pool), signal.NewComputer(forecastOptions(signal.ForecastOnly)), beforeRise)
		off := coldStartUntil(t, f.source(t, "daily", pool), signal.NewComputer(forecastOptions(signal.ForecastOff)), beforeRise)
		if only.Forecast < 2.2 || only.ScaleValue != off.ScaleValue || only.Reason != off.Reason {
			t.Fatalf("forecast only: scale %.2f forecast %.2f reason %q; off: scale %.2f reason %q", only.ScaleValue, only.Forecast, only.Reason, off.ScaleValue, off.Reason)
		}
	})

	t.Run("no season, no forecast", func(t *testing.T) {
		src := f.source(t, "flat", pool)
		on := coldStartUntil(t, src, signal.NewComputer(forecastOptions(signal.ForecastOn)), beforeRise)
		if on.Forecast != 0 || on.ForecastHistoryPending {
			t.Fatalf("a history with no daily or weekly cycle: forecast %.2f, history pending %t; want 0, read", on.Forecast, on.ForecastHistoryPending)
		}
	})

	t.Run("queries per sample", func(t *testing.T) {
		local := querypool.New(0)
		src := f.source(t, "daily", local)
		lreg := prometheus.NewRegistry()
		lreg.MustRegister(local)
		sent := func() float64 { return counter(t, lreg, "barometer_prometheus_queries_total") }
		c := signal.NewComputer(forecastOptions(signal.ForecastOn))
		// Two hours of samples every 15 s from a cold start: nothing
		// read at first, then at most one window a sample, at the
		// target's phases: the recent windows' three once a 5-minute
		// step, the long history's eight once an hour, and nothing else.
		const interval, span = 15 * time.Second, 2 * time.Hour
		var samples int
		var firstLong time.Time
		for at := beforeRise; at.Before(beforeRise.Add(span)); at = at.Add(interval) {
			before := sent()
			season, err := src.ObserveSeason(context.Background(), at, histCompute)
			if err != nil {
				t.Fatal(err)
			}
			if n := sent() - before; n > 1 {
				t.Fatalf("at %s: %v queries, want at most one window a sample", at.Format("15:04:05"), n)
			}
			if n := len(season.Recent); n != 0 && n != recentPoints {
				t.Errorf("at %s: %d recent points, want %d", at.Format("15:04:05"), n, recentPoints)
			}
			sig := c.Compute(at, signal.Input{Compute: pressure.ComputePressure{Activation: 0.2, ReplicaCount: histReplicas}, MeasuredAt: at, Season: &season})
			if season.Long != nil && firstLong.IsZero() {
				firstLong = at
			}
			if pending := firstLong.IsZero(); sig.ForecastHistoryPending != pending {
				t.Errorf("at %s: history pending %t, want %t", at.Format("15:04:05"), sig.ForecastHistoryPending, pending)
			}
			samples++
		}
		if firstLong.IsZero() || firstLong.Sub(beforeRise) > time.Hour+12*interval {
			t.Errorf("the long history was first read whole %v after the cold start, want within the first hour", firstLong.Sub(beforeRise))
		}
		steps := int(span / pressure.SeasonStep)
		if n, most := int(sent()), 3*steps+8*2; n < 3*(steps-1)+8 || n > most {
			t.Errorf("over %v from a cold start: %d range queries, want from %d to %d", span, n, 3*(steps-1)+8, most)
		}
		t.Logf("%d range queries over %d samples at %v: %.3f per target per interval; the long history read whole %v after the start",
			int(sent()), samples, interval, sent()/float64(samples), firstLong.Sub(beforeRise))
	})
}

// recentPoints is how many points the recent windows hold with every
// instant read: the level's six, and 25 a period ago (30 minutes before
// the instant to 90 minutes after it), twice.
const recentPoints = 6 + 2*25

// counter is the value of the one counter of the family name reg gathers.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range families {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
