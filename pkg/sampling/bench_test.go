package sampling

import (
	"context"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// BenchmarkSnapshotRead is what every gRPC call, /scale request and probe
// pays: one atomic load. Target: 0 allocs/op.
func BenchmarkSnapshotRead(b *testing.B) {
	s := newTestSampler(b, newFakeClock(), &scripted{steps: []func() (pressure.Observation, error){replicas(0.5, 0.6)}}, signal.DefaultOptions())
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
