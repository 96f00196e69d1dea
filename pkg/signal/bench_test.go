package signal

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal/seasonal"
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

// BenchmarkComputeForecast folds one sample through the budgeted profile
// with the forecast on, its history full. The only allocation is the
// Reason string.
func BenchmarkComputeForecast(b *testing.B) {
	c := NewComputer(budgetedWith(b, ForecastOn))
	now := t0
	for range seasonal.Buckets * 5 {
		now = now.Add(time.Minute)
		c.Compute(now, Input{Compute: pressure.ComputePressure{Resource: rush(now) / 20, ReplicaCount: 20}, MeasuredAt: now.Add(-15 * time.Second)})
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(5 * time.Second)
		c.Compute(now, Input{Compute: pressure.ComputePressure{Resource: rush(now) / 20, ReplicaCount: 20}, MeasuredAt: now.Add(-15 * time.Second)})
	}
}
