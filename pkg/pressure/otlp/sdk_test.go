package otlp_test

import (
	"context"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// instruments are the contract's metrics as a workload records them with
// the OTel SDK.
type instruments struct {
	activations, memory, memoryLimit, cpuLimit, wal, retained metric.Float64Gauge
	cpu, arrivals                                             metric.Float64Counter
	runs                                                      metric.Float64Histogram
}

func newInstruments(t *testing.T, mp *sdkmetric.MeterProvider) instruments {
	t.Helper()
	m := mp.Meter("barometer-test")
	var in instruments
	var err error
	must := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	gauge := func(name string) metric.Float64Gauge {
		g, e := m.Float64Gauge(name)
		must(e)
		return g
	}
	in.activations = gauge(exposition.Activations)
	in.memory = gauge(exposition.MemoryBytes)
	in.memoryLimit = gauge(exposition.MemoryLimitBytes)
	in.cpuLimit = gauge(exposition.CPULimitCores)
	in.wal = gauge(exposition.WalState)
	in.retained = gauge(exposition.TreeRetainedBytes)
	in.cpu, err = m.Float64Counter(exposition.CPUSeconds)
	must(err)
	var e error
	in.arrivals, e = m.Float64Counter(exposition.QueueArrivals)
	must(e)
	in.runs, e = m.Float64Histogram(exposition.QueueRunDuration, metric.WithExplicitBucketBoundaries(0.1, 1, 10))
	must(e)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// recordContract records one sample of the contract: a replica's gauges,
// 10 CPU seconds, 7 arrivals and 2 runs of 3 s in all. checkContract is
// what a source reads of it.
func (in instruments) recordContract(ctx context.Context) {
	in.activations.Record(ctx, 40_000)
	in.memory.Record(ctx, 256<<20)
	in.memoryLimit.Record(ctx, 512<<20)
	in.cpuLimit.Record(ctx, 2)
	in.wal.Record(ctx, 1)
	in.cpu.Add(ctx, 10)
	in.arrivals.Add(ctx, 7)
	in.runs.Record(ctx, 0.5)
	in.runs.Record(ctx, 2.5)
}

// checkContract checks that obs reads recordContract's sample as shop-1's.
// The SDK's cumulative points start when the provider did, so the first
// push already rates: 10 s counted since then.
func checkContract(t *testing.T, obs pressure.Observation) {
	t.Helper()
	if len(obs.Replicas) != 1 {
		t.Fatalf("replicas = %+v, want shop-1", obs.Replicas)
	}
	r := obs.Replicas[0]
	if r.Name != "shop-1" || r.WorkingSet != 40_000 || r.MemoryUsedBytes != 256<<20 ||
		r.MemoryLimitBytes != 512<<20 || r.WalSaturation != pressure.Throttled {
		t.Errorf("replica = %+v", r)
	}
	if !(r.CPUUtilisation > 0) {
		t.Errorf("first push: CPU = %v, want the rate since the counter's start", r.CPUUtilisation)
	}
	if q := obs.Queue; q == nil || q.Arrivals != 7 || q.Runs != 2 || q.RunSeconds != 3 {
		t.Errorf("queue = %+v, want 7 arrivals, 2 runs of 3 s", obs.Queue)
	}
}

// The contract pushed by the real OTel SDK, over gRPC and over HTTP,
// reads as the scrape source would read it exposed: gauges as they are,
// the CPU counter as a rate over its limit from the second push on, the
// queue counter raw, the run-duration histogram as its sum and count.
func TestSDKPushReadsAsTheContract(t *testing.T) {
	for _, transport := range []string{"grpc", "http"} {
		t.Run(transport, func(t *testing.T) {
			h := newHarness(t, store.Options{}, receiver.Config{}, "")
			var exp sdkmetric.Exporter
			if transport == "grpc" {
				exp = grpcExporter(t, h, tokenA, false)
			} else {
				exp = httpExporter(t, h, tokenA)
			}
			s := newSDK(t, exp, podResource("team-a", "shop", "shop-1"))
			in := newInstruments(t, s.provider)
			ctx := context.Background()
			in.recordContract(ctx)
			in.retained.Record(ctx, 700, metric.WithAttributes(attribute.String("tree", "wal")))
			if err := s.flush(t); err != nil {
				t.Fatal(err)
			}
			src := newSource(t, h, "team-a", "shop", time.Now, time.Minute)
			obs, err := src.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			checkContract(t, obs)
			if r := obs.Replicas[0]; r.Pod != "shop-1" {
				t.Errorf("replica's pod = %q, want shop-1", r.Pod)
			}
			if len(obs.Trees) != 1 || obs.Trees[0].Tree != "wal" || obs.Trees[0].RetainedBytes != 700 {
				t.Errorf("trees = %+v", obs.Trees)
			}
			first := obs.MeasuredAt
			if first.IsZero() || first.After(time.Now()) {
				t.Errorf("MeasuredAt = %v, want the point's own time", first)
			}

			in.cpu.Add(ctx, 1)
			in.arrivals.Add(ctx, 3)
			if err := s.flush(t); err != nil {
				t.Fatal(err)
			}
			obs, err = src.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// One CPU second between two pushes taken a moment apart is
			// a rate well above the two-core limit: clamped later, but
			// present and positive here.
			if cpu := obs.Replicas[0].CPUUtilisation; !(cpu > 0) || math.IsInf(cpu, 0) {
				t.Errorf("second push: CPU = %v, want a rate above 0", cpu)
			}
			if obs.Queue.Arrivals != 10 {
				t.Errorf("arrivals = %v, want the raw cumulative 10", obs.Queue.Arrivals)
			}
			if !obs.MeasuredAt.After(first) {
				t.Errorf("MeasuredAt %v did not move past %v", obs.MeasuredAt, first)
			}
		})
	}
}

// Delta sums and histograms (the SDK's delta temporality) are added up:
// the store reads them as the cumulative values a scrape would see.
func TestSDKDeltaTemporality(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	s := newSDK(t, grpcExporter(t, h, tokenA, true), podResource("team-a", "shop", "shop-1"))
	in := newInstruments(t, s.provider)
	ctx := context.Background()
	for _, step := range []struct {
		arrivals float64
		runs     []float64
	}{{5, []float64{0.05, 0.5}}, {3, []float64{5}}, {0, nil}} {
		if step.arrivals > 0 {
			in.arrivals.Add(ctx, step.arrivals)
		}
		for _, r := range step.runs {
			in.runs.Record(ctx, r)
		}
		in.activations.Record(ctx, 1)
		if err := s.flush(t); err != nil {
			t.Fatal(err)
		}
	}
	obs, err := newSource(t, h, "team-a", "shop", time.Now, time.Minute).Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q := obs.Queue; q == nil || q.Arrivals != 8 || q.Runs != 3 || math.Abs(q.RunSeconds-5.55) > 1e-9 {
		t.Fatalf("queue = %+v, want 8 arrivals and 3 runs of 5.55 s", obs.Queue)
	}
	reps := h.store.Read(store.Query{Namespace: "team-a", Selector: map[string]string{"k8s.deployment.name": "shop"},
		Metrics: map[string]bool{exposition.QueueRunDuration: true}, Window: time.Hour})
	x := reps[0].Series[0]
	if x.Kind != store.Histogram || x.WindowCount != 3 {
		t.Fatalf("run duration = %+v, want a histogram of 3 runs", x)
	}
	if mean, ok := x.Mean(); !ok || math.Abs(mean-1.85) > 1e-9 {
		t.Errorf("mean = %v, want 1.85", mean)
	}
	// Buckets (0,0.1] 1, (0.1,1] 1, (1,10] 1: rank 1.5 lies halfway
	// into the second bucket, interpolated as histogram_quantile does.
	if q, ok := x.Quantile(0.5); !ok || math.Abs(q-0.55) > 1e-9 {
		t.Errorf("median = %v, want 0.55", q)
	}
}
