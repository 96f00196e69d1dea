package sampling

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkParkedSamplers is what each running sampler holds in stack
// between samples: n samplers (an aligned one-minute interval each, the
// first sample done) parked, their stacks after two GCs, per sampler
// (stack-B/sampler). Target: the smallest stack, 2 KiB.
func BenchmarkParkedSamplers(b *testing.B) {
	const n = 1000
	for b.Loop() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before, goroutines := ms.StackInuse, runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		var sampled atomic.Int64
		src := pressure.SourceFunc(func(context.Context) (pressure.Observation, error) {
			sampled.Add(1)
			return pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}}}, nil
		})
		var wg sync.WaitGroup
		for i := range n {
			s := NewSampler(SamplerConfig{Source: src, Decider: pressureDecider(b, signal.DefaultOptions()),
				Interval: time.Minute + time.Duration(i)*time.Millisecond, Align: true})
			wg.Go(func() { s.Run(ctx) })
		}
		// Every sampler has sampled once and its sample's goroutine is gone.
		for sampled.Load() < n || runtime.NumGoroutine() > goroutines+n {
			runtime.Gosched()
		}
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.StackInuse-before)/n, "stack-B/sampler")
		cancel()
		wg.Wait()
	}
}
