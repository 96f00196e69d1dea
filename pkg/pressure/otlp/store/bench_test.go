package store_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

type allow struct{}

func (allow) Namespace(claimed string) (string, bool) { return claimed, true }

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// contractPush is one push of pods replicas, each with the contract as a
// workload pushes it: nine gauges, two counters and a ten-bucket
// histogram, twelve series a pod.
func contractPush(pods int, t time.Time) *colmetrics.ExportMetricsServiceRequest {
	ts := uint64(t.UnixNano())
	start := ts - uint64(time.Hour)
	num := func(v float64, attrs ...*commonpb.KeyValue) []*metricspb.NumberDataPoint {
		return []*metricspb.NumberDataPoint{{TimeUnixNano: ts, StartTimeUnixNano: start, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}, Attributes: attrs}}
	}
	g := func(name string, v float64, attrs ...*commonpb.KeyValue) *metricspb.Metric {
		return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: num(v, attrs...)}}}
	}
	c := func(name string, v float64) *metricspb.Metric {
		return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true,
			AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, DataPoints: num(v)}}}
	}
	req := &colmetrics.ExportMetricsServiceRequest{}
	for p := range pods {
		hist := &metricspb.Metric{Name: exposition.QueueRunDuration, Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
			AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			DataPoints: []*metricspb.HistogramDataPoint{{TimeUnixNano: ts, StartTimeUnixNano: start, Count: 100, Sum: proto.Float64(12),
				ExplicitBounds: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5}, BucketCounts: []uint64{1, 2, 3, 4, 10, 20, 30, 20, 5, 5}}}}}}
		req.ResourceMetrics = append(req.ResourceMetrics, &metricspb.ResourceMetrics{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("k8s.namespace.name", "team-a"),
				str("k8s.deployment.name", "shop"), str("k8s.pod.name", fmt.Sprintf("shop-%d", p)), str("service.name", "shop")}},
			ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
				g(exposition.Activations, 40_000), g(exposition.MemoryBytes, 1<<28), g(exposition.MemoryLimitBytes, 1<<29),
				g(exposition.CPULimitCores, 2), g(exposition.WalState, 0), g(exposition.SplitsInFlight, 0),
				g(exposition.TreeRetainedBytes, 1e6, str("tree", "wal")), g(exposition.QueueReady, 3, str("class", "normal")),
				g(exposition.QueueBusy, 5),
				c(exposition.CPUSeconds, float64(t.Unix())), c(exposition.QueueArrivals, float64(t.Unix())),
				hist,
			}}},
		})
	}
	return req
}

// setTime moves every point of a decoded push to t, so that repeated
// pushes are new points rather than duplicates.
func setTime(req *colmetrics.ExportMetricsServiceRequest, t time.Time) {
	ts := uint64(t.UnixNano())
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				for _, dp := range m.GetGauge().GetDataPoints() {
					dp.TimeUnixNano = ts
				}
				for _, dp := range m.GetSum().GetDataPoints() {
					dp.TimeUnixNano = ts
				}
				for _, dp := range m.GetHistogram().GetDataPoints() {
					dp.TimeUnixNano = ts
				}
			}
		}
	}
}

// BenchmarkIngest decodes a protobuf push of 100 pods (1,200 points, the
// contract's twelve series each) and stores it, every push one second
// after the last: the receiver's work per push, without the transport.
//
//	go test -run '^$' -bench Ingest -cpu 1 ./pkg/pressure/otlp/store/
func BenchmarkIngest(b *testing.B) {
	start := time.Now().Add(-24 * time.Hour)
	body, err := proto.Marshal(contractPush(100, start))
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.New(store.Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	points := 0
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	i := 0
	for b.Loop() {
		req := &colmetrics.ExportMetricsServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			b.Fatal(err)
		}
		i++
		setTime(req, start.Add(time.Duration(i)*time.Second))
		res, err := st.Ingest(req.GetResourceMetrics(), allow{})
		if err != nil || res.Accepted != 1200 {
			b.Fatalf("%+v %v", res, err)
		}
		points += res.Accepted
	}
	b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkMemoryPer1000Series is the live heap the store holds per 1,000
// series once every counter's and histogram's history is full (40 pushes
// two seconds apart), for 1,000 pods of the contract's twelve series.
//
//	go test -run '^$' -bench MemoryPer1000Series -benchtime 1x ./pkg/pressure/otlp/store/
func BenchmarkMemoryPer1000Series(b *testing.B) {
	const pods = 1000
	start := time.Now().Add(-24 * time.Hour)
	for b.Loop() {
		req := contractPush(pods, start)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		reg := prometheus.NewRegistry()
		st, err := store.New(store.Options{MaxSeriesPerNamespace: 100_000, MaxMemoryBytes: 1 << 30}, reg)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 40 {
			setTime(req, start.Add(time.Duration(2*i)*time.Second))
			if res, err := st.Ingest(req.GetResourceMetrics(), allow{}); err != nil || res.Rejected > 0 {
				b.Fatalf("%+v %v", res, err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		series := float64(pods * 12)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/series*1000, "live-bytes/1000-series")
		b.ReportMetric(testutil.ToFloat64(gaugeOf(b, reg, "barometer_otlp_memory_bytes"))/series*1000, "estimated-bytes/1000-series")
		runtime.KeepAlive(st)
		runtime.KeepAlive(req)
	}
}
