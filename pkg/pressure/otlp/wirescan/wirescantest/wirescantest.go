// Package wirescantest builds OTLP pushes for the wire scan's and the
// receiver's tests: what a real collector sends, and bodies built to
// decode into far more than their size.
package wirescantest

import (
	"fmt"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/wirescan"
)

// CollectorPush is what a collector sends for pods replicas of the
// contract (nine gauges, two counters, a ten-bucket histogram), each
// resource carrying the fifteen attributes the k8sattributes processor
// and the SDK give a pod.
func CollectorPush(pods int) *colmetrics.ExportMetricsServiceRequest {
	s := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	ts := uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	num := func(v float64, attrs ...*commonpb.KeyValue) []*metricspb.NumberDataPoint {
		return []*metricspb.NumberDataPoint{{TimeUnixNano: ts, StartTimeUnixNano: ts - 3600e9, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}, Attributes: attrs}}
	}
	g := func(name string, v float64, attrs ...*commonpb.KeyValue) *metricspb.Metric {
		return &metricspb.Metric{Name: name, Unit: "1", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: num(v, attrs...)}}}
	}
	c := func(name string, v float64) *metricspb.Metric {
		return &metricspb.Metric{Name: name, Unit: "s", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true, AggregationTemporality: 2, DataPoints: num(v)}}}
	}
	req := &colmetrics.ExportMetricsServiceRequest{}
	for p := range pods {
		pod := fmt.Sprintf("shop-7d9f8c6b5-%05d", p)
		attrs := []*commonpb.KeyValue{s("k8s.namespace.name", "team-a"), s("k8s.deployment.name", "shop"), s("k8s.pod.name", pod),
			s("k8s.pod.uid", "0b7c2a4e-1f2d-4c3b-9a8e-7f6d5c4b3a21"), s("k8s.node.name", "node-12.eu-west-1.compute.internal"),
			s("k8s.replicaset.name", "shop-7d9f8c6b5"), s("k8s.pod.start_time", "2026-01-01T00:00:00Z"), s("service.name", "shop"),
			s("service.instance.id", pod), s("service.version", "1.42.0"), s("telemetry.sdk.name", "opentelemetry"),
			s("telemetry.sdk.language", "go"), s("telemetry.sdk.version", "1.47.0"), s("host.name", pod), s("k8s.cluster.name", "prod-eu")}
		hist := &metricspb.Metric{Name: "barometer_queue_run_duration_seconds", Unit: "s", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
			AggregationTemporality: 2, DataPoints: []*metricspb.HistogramDataPoint{{TimeUnixNano: ts, StartTimeUnixNano: ts - 3600e9, Count: 100, Sum: proto.Float64(12),
				ExplicitBounds: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5}, BucketCounts: []uint64{1, 2, 3, 4, 10, 20, 30, 20, 5, 5}}}}}}
		req.ResourceMetrics = append(req.ResourceMetrics, &metricspb.ResourceMetrics{
			Resource: &resourcepb.Resource{Attributes: attrs}, SchemaUrl: "https://opentelemetry.io/schemas/1.26.0",
			ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{Name: "shop/pressure", Version: "1.0.0"}, Metrics: []*metricspb.Metric{
				g("barometer_activations", 40_000), g("process_resident_memory_bytes", 1<<28), g("barometer_memory_limit_bytes", 1<<29),
				g("barometer_cpu_limit_cores", 2), g("barometer_wal_saturation_state", 0), g("barometer_splits_in_flight", 0),
				g("barometer_wal_tree_retained_bytes", 1e6, s("tree", "wal")), g("barometer_queue_ready", 3, s("class", "normal")),
				g("barometer_queue_busy", 5), c("process_cpu_seconds_total", 1234.5), c("barometer_queue_arrivals_total", 99), hist,
			}}},
		})
	}
	return req
}

// repeatField is n copies of one field: a body of n resources, or of n
// of anything an attacker chooses.
func repeatField(num protowire.Number, value []byte, n int) []byte {
	var b []byte
	for range n {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendBytes(b, value)
	}
	return b
}

// HostileBodies are bodies shaped to decode into far more than their
// size, each about size bytes.
func HostileBodies(size int) map[string][]byte {
	msg := func(m proto.Message) []byte { b, _ := proto.Marshal(m); return b }
	emptyKV := msg(&commonpb.KeyValue{})
	resourceWithKVs := func(kv []byte) []byte {
		attrs := repeatField(1, kv, size/(len(kv)+2))
		res := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), attrs) // ResourceMetrics.resource
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), res)   // request.resource_metrics
	}
	// A gauge of empty points: Metric{gauge{data_points: {} x n}}.
	points := repeatField(1, nil, size/2)
	metric := protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), points)
	scope := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), metric)
	rm := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), scope)
	// Nested array values: AnyValue{array{values: AnyValue{array{...}}}}.
	var nested []byte
	for range (wirescan.MaxDepth - 6) / 2 {
		arr := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), nested) // ArrayValue.values
		nested = protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), arr)  // AnyValue.array_value
	}
	nestedKV := protowire.AppendBytes(protowire.AppendTag(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("k")), 2, protowire.BytesType), nested)
	var unknown []byte
	for len(unknown) < size {
		unknown = protowire.AppendVarint(protowire.AppendTag(unknown, 99, protowire.VarintType), 1)
	}
	// An exponential histogram's buckets, a packed list of 1-byte varints.
	counts := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), make([]byte, size-32))  // Buckets.bucket_counts
	packed := histogramPoint(protowire.AppendBytes(protowire.AppendTag(nil, 8, protowire.BytesType), counts)) // .positive
	// The same list unpacked: a tag and a varint an element.
	var unpacked []byte
	for len(unpacked) < size-32 {
		unpacked = protowire.AppendVarint(protowire.AppendTag(unpacked, 2, protowire.VarintType), 1)
	}
	unpackedPoint := histogramPoint(protowire.AppendBytes(protowire.AppendTag(nil, 8, protowire.BytesType), unpacked))
	return map[string][]byte{
		"empty resources":        repeatField(1, nil, size/2),
		"empty attributes":       resourceWithKVs(emptyKV),
		"empty points":           protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rm),
		"nested attribute value": resourceWithKVs(nestedKV),
		"unknown fields":         unknown,
		"packed buckets":         packed,
		"unpacked buckets":       unpackedPoint,
	}
}

// histogramPoint is a request of one exponential histogram point.
func histogramPoint(point []byte) []byte {
	wrap := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	// request.resource_metrics, .scope_metrics, .metrics, .exponential_histogram, .data_points
	return wrap(1, wrap(2, wrap(2, wrap(10, wrap(1, point)))))
}

// RawCodec sends a gRPC message's bytes (a *[]byte) as they are and reads
// the answer's bytes the same way, so a test's body, however broken,
// reaches the receiver unchanged: grpc.ForceCodecV2(RawCodec{}).
type RawCodec struct{}

func (RawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (RawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (RawCodec) Name() string { return "proto" }
