package otlp_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// NaN, infinite and negative values of the contract, pushed by the real
// SDK and by hand, are refused with their reason, counted, and never read:
// the replica reads as it did before them.
func TestBadValuesNeverBecomePressure(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	s := newSDK(t, grpcExporter(t, h, tokenA, false), podResource("team-a", "shop", "shop-1"))
	in := newInstruments(t, s.provider)
	ctx := context.Background()
	src := newSource(t, h, "team-a", "shop", time.Now, time.Minute)
	read := func() pressure.ReplicaObservation {
		t.Helper()
		obs, err := src.Observe(ctx)
		if err != nil || len(obs.Replicas) != 1 {
			t.Fatalf("%+v %v", obs, err)
		}
		return obs.Replicas[0]
	}
	in.activations.Record(ctx, 40)
	in.memory.Record(ctx, 128<<20)
	in.memoryLimit.Record(ctx, 256<<20)
	if err := s.flush(t); err != nil {
		t.Fatal(err)
	}
	before := read()
	if before.WorkingSet != 40 || before.MemoryUsedBytes != 128<<20 {
		t.Fatalf("before: %+v", before)
	}
	for _, bad := range []struct {
		v      float64
		reason string
	}{{math.NaN(), "NaN"}, {math.Inf(1), "infinite"}, {-50, "negative"}} {
		v, reason := bad.v, bad.reason
		in.activations.Record(ctx, v)
		in.memory.Record(ctx, v)
		// The SDK reports OTLP's partial success as the push's error.
		if err := s.flush(t); err == nil || !strings.Contains(err.Error(), "2 points: value is "+reason) {
			t.Errorf("push of %v: %v, want a partial success naming the reason", v, err)
		}
		if got := read(); got.WorkingSet != before.WorkingSet || got.MemoryUsedBytes != before.MemoryUsedBytes {
			t.Errorf("after a push of %v: %+v, want it read as before", v, got)
		}
	}
	for _, reason := range []string{"nan", "infinite", "negative"} {
		if got := metricValue(t, h.reg, "barometer_otlp_points_rejected_total", "reason", reason); got != 2 {
			t.Errorf("%s counted %v, want the 2 gauges", reason, got)
		}
	}

	// What the SDK will not send: a counter that is NaN or negative, a
	// histogram whose sum is NaN; answered as a partial success.
	histogram := &metricspb.Metric{Name: exposition.QueueRunDuration, Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
		AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
		DataPoints:             []*metricspb.HistogramDataPoint{{TimeUnixNano: nanos(time.Now()), Count: 1, Sum: proto.Float64(math.NaN())}}}}}
	resp, err := newRawClient(t, h, tokenA).export(rm("team-a", "shop", "shop-1",
		counter(exposition.CPUSeconds, numberPoint(time.Now(), time.Time{}, math.NaN())),
		counter(exposition.QueueArrivals, numberPoint(time.Now(), time.Time{}, -5)), histogram))
	if err != nil {
		t.Fatal(err)
	}
	if ps := resp.GetPartialSuccess(); ps.GetRejectedDataPoints() != 3 || !strings.Contains(ps.GetErrorMessage(), "NaN") ||
		!strings.Contains(ps.GetErrorMessage(), "negative") {
		t.Errorf("partial success %v, want the 3 points refused with their reasons", ps)
	}
	obs, err := src.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Queue != nil {
		t.Errorf("queue %+v, want none: every queue point was refused", obs.Queue)
	}
}

// A point timed 50 s ahead, inside the allowed skew, is stored at its
// receive time with the pusher warned: the on-time points after it are
// read, and the data is never younger than the sample.
func TestFastClockPoint(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	c := newRawClient(t, h, tokenA)
	push := func(at time.Time, v float64) string {
		t.Helper()
		resp, err := c.export(rm("team-a", "shop", "shop-1", gauge(exposition.Activations, numberPoint(at, time.Time{}, v))))
		if err != nil || resp.GetPartialSuccess().GetRejectedDataPoints() != 0 {
			t.Fatalf("push at %s: %v %v", at, resp, err)
		}
		return resp.GetPartialSuccess().GetErrorMessage()
	}
	src := newSource(t, h, "team-a", "shop", time.Now, time.Minute)
	read := func() pressure.Observation {
		t.Helper()
		obs, err := src.Observe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return obs
	}
	push(time.Now().Add(-time.Second), 10)
	if msg := push(time.Now().Add(50*time.Second), 10); !strings.Contains(msg, "clock") {
		t.Errorf("warning %q, want the pusher's clock named", msg)
	}
	obs := read()
	if obs.Replicas[0].WorkingSet != 10 || obs.MeasuredAt.After(obs.ObservedAt) {
		t.Fatalf("after the fast point: %v measured at %v, sampled at %v; want 10, measured no later than sampled",
			obs.Replicas[0].WorkingSet, obs.MeasuredAt, obs.ObservedAt)
	}
	push(time.Now(), 20)
	if obs := read(); obs.Replicas[0].WorkingSet != 20 {
		t.Fatalf("an on-time point after the fast one: read %v, want 20", obs.Replicas[0].WorkingSet)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_points_retimed_total"); got != 1 {
		t.Errorf("retimed counted %v, want 1", got)
	}
}

// A contract metric pushed as the wrong type (the SDK's histogram where
// the contract has a gauge) reads as absent: a replica with nothing else
// is named missing, with the metric and its type, not read as idle.
func TestWrongTypeContractMetric(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	ctx := context.Background()
	good := newSDK(t, grpcExporter(t, h, tokenA, false), podResource("team-a", "shop", "shop-1"))
	g, _ := good.provider.Meter("m").Float64Gauge(exposition.Activations)
	g.Record(ctx, 40)
	if err := good.flush(t); err != nil {
		t.Fatal(err)
	}
	wrong := newSDK(t, httpExporter(t, h, tokenA), podResource("team-a", "shop", "shop-2"))
	hist, _ := wrong.provider.Meter("m").Float64Histogram(exposition.Activations)
	hist.Record(ctx, 40)
	if err := wrong.flush(t); err != nil {
		t.Fatal(err)
	}
	obs, err := newSource(t, h, "team-a", "shop", time.Now, time.Minute).Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Replicas) != 1 || obs.Replicas[0].Name != "shop-1" || obs.Replicas[0].WorkingSet != 40 {
		t.Fatalf("replicas %+v, want shop-1 alone at 40", obs.Replicas)
	}
	if len(obs.Missing) != 1 || obs.Missing[0].Name != "shop-2" ||
		!strings.Contains(obs.Missing[0].Err.Error(), exposition.Activations+" is pushed as a histogram (the contract's is a gauge or counter)") {
		t.Fatalf("missing %+v, want shop-2 named with its wrong type", obs.Missing)
	}
}
