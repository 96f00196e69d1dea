// Package storetest builds the pushes the OTLP store's tests and
// benchmarks send, as httptest builds servers: one pod's contract, as a
// workload pushes it, for as many pods as asked.
package storetest

import (
	"fmt"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// Str is a string attribute.
func Str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// ContractPush is one push of pods replicas, each with the contract as a
// workload pushes it: nine gauges, two counters and a ten-bucket
// histogram, twelve series a pod.
func ContractPush(pods int, t time.Time) *colmetrics.ExportMetricsServiceRequest {
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
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{Str("k8s.namespace.name", "team-a"),
				Str("k8s.deployment.name", "shop"), Str("k8s.pod.name", fmt.Sprintf("shop-%d", p)), Str("service.name", "shop")}},
			ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
				g(exposition.Activations, 40_000), g(exposition.MemoryBytes, 1<<28), g(exposition.MemoryLimitBytes, 1<<29),
				g(exposition.CPULimitCores, 2), g(exposition.WalState, 0), g(exposition.SplitsInFlight, 0),
				g(exposition.TreeRetainedBytes, 1e6, Str("tree", "wal")), g(exposition.QueueReady, 3, Str("class", "normal")),
				g(exposition.QueueBusy, 5),
				c(exposition.CPUSeconds, float64(t.Unix())), c(exposition.QueueArrivals, float64(t.Unix())),
				hist,
			}}},
		})
	}
	return req
}

// SetTime moves every point of a decoded push to t, so that repeated
// pushes are new points rather than duplicates.
func SetTime(req *colmetrics.ExportMetricsServiceRequest, t time.Time) {
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
