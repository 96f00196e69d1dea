package signal

import (
	"context"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// BenchmarkSnapshotRead is what every gRPC call, /scale request and probe
// pays: one atomic load. Target: 0 allocs/op.
func BenchmarkSnapshotRead(b *testing.B) {
	s := newTestSampler(newFakeClock(), &scripted{steps: []func() (pressure.Observation, error){replicas(0.5, 0.6)}}, DefaultOptions())
	s.SampleOnce(context.Background())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var v float64
		for pb.Next() {
			v += s.Load().Signal.ScaleValue
		}
		_ = v
	})
}

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
// (the lead's trend, the surge, the margins) on stale samples. The only
// allocation is still the Reason string.
func BenchmarkComputeResponsive(b *testing.B) {
	c := NewComputer(responsive(b))
	ins := []Input{in(0.9, 8), in(0.1, 8), in(1, 4), in(0.5, 8)}
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = now.Add(5 * time.Second)
		smp := ins[i%len(ins)]
		smp.MeasuredAt = now.Add(-15 * time.Second)
		c.Compute(now, smp)
	}
}
