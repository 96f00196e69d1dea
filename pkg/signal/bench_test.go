package signal

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// BenchmarkCompute folds one sample. The only allocation is the Reason
// string.
func BenchmarkCompute(b *testing.B) {
	c := NewComputer(DefaultOptions())
	ins := []Input{in(0.9, 8), in(0.1, 8)}
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = now.Add(5 * time.Second)
		c.Compute(now, ins[i%2])
	}
}

// BenchmarkComputeResponsive folds one sample with every compensation on
// (the lead's trend, the surge and the working set it reads, the margins)
// on stale samples. The only
// allocation is still the Reason string.
func BenchmarkComputeResponsive(b *testing.B) {
	c := NewComputer(responsive(b))
	working := 12.0 // the saturated pool's working set: 3 times the pool
	saturated := in(1, 4)
	saturated.Compute.WorkingSetDemand = &working
	ins := []Input{in(0.9, 8), in(0.1, 8), saturated, in(0.5, 8)}
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = now.Add(5 * time.Second)
		smp := ins[i%len(ins)]
		smp.MeasuredAt = now.Add(-15 * time.Second)
		c.Compute(now, smp)
	}
}

// BenchmarkForecast is the seasonal forecast's cost per sample at a 5 s
// interval over a full eight-day history with a season: each sample folds
// into its bucket and reads the forecast; each bucket's close (one sample
// in 60) tests the history for a day and a week. The history is
// SeasonBuckets float32 (9,216 bytes per target once eight days are held), filled before the
// timer starts.
func BenchmarkForecast(b *testing.B) {
	s := feed(daily, 2, time.Duration(SeasonBuckets)*SeasonBucket, time.Minute)
	if s.period == 0 {
		b.Fatal("no season found")
	}
	now := s.last
	b.ReportAllocs()
	b.ReportMetric(float64(len(s.hist)*4), "history-bytes")
	var sink float64
	for b.Loop() {
		now = now.Add(5 * time.Second)
		s.observe(now, daily(now))
		sink += s.forecast(15 * time.Minute)
	}
	_ = sink
}

// BenchmarkComputeForecast folds one sample through the budgeted profile
// with the forecast on, its history full. The only allocation is the
// Reason string.
func BenchmarkComputeForecast(b *testing.B) {
	c := NewComputer(budgetedWith(b, ForecastOn))
	now := t0
	for range SeasonBuckets * 5 {
		now = now.Add(time.Minute)
		c.Compute(now, Input{Compute: pressure.ComputePressure{Resource: rush(now) / 20, ReplicaCount: 20}, MeasuredAt: now.Add(-15 * time.Second)})
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(5 * time.Second)
		c.Compute(now, Input{Compute: pressure.ComputePressure{Resource: rush(now) / 20, ReplicaCount: 20}, MeasuredAt: now.Add(-15 * time.Second)})
	}
}
