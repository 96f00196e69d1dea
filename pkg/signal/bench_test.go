package signal

import (
	"testing"
	"time"
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
