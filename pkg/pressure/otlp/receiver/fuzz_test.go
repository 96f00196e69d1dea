package receiver

import (
	"errors"
	"math"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/wirescan"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/wirescan/wirescantest"
)

// anyNamespace grants every namespace, so the fuzzer reaches the store.
type anyNamespace struct{}

func (anyNamespace) Namespace(claimed string) (string, bool) { return claimed, true }

func seedRequest() *colmetrics.ExportMetricsServiceRequest {
	s := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	t := uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return &colmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{s("k8s.namespace.name", "a"), s("k8s.deployment.name", "d"), s("k8s.pod.name", "p")}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
				{TimeUnixNano: t, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 1}, Attributes: []*commonpb.KeyValue{s("tree", "w")}}}}}},
			{Name: "c", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true, AggregationTemporality: 2, DataPoints: []*metricspb.NumberDataPoint{
				{TimeUnixNano: t, StartTimeUnixNano: t - 1e9, Value: &metricspb.NumberDataPoint_AsInt{AsInt: 5}}, {TimeUnixNano: t + 1e9, Value: &metricspb.NumberDataPoint_AsInt{AsInt: 2}}}}}},
			{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{AggregationTemporality: 1, DataPoints: []*metricspb.HistogramDataPoint{
				{TimeUnixNano: t, Count: 3, Sum: proto.Float64(2), BucketCounts: []uint64{1, 1, 1}, ExplicitBounds: []float64{0.5, 1}}}}}},
			{Name: "s", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: []*metricspb.SummaryDataPoint{{TimeUnixNano: t, Count: 1, Sum: 1}}}}},
		}}},
	}}}
}

// FuzzOTLPDecode feeds arbitrary bodies through the receiver's scan and
// decoders (protobuf and JSON) into a small store, twice (the second push
// meets the first's series), and reads them back. Nothing may panic; a
// protobuf body that decodes must pass the scan, with the counts the
// decode finds; every point must be accounted for exactly once, the caps
// must hold and no counter read may be NaN.
func FuzzOTLPDecode(f *testing.F) {
	req := seedRequest()
	pb, _ := proto.Marshal(req)
	js, _ := protojson.Marshal(req)
	f.Add(pb, false)
	f.Add(js, true)
	f.Add([]byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"x","gauge":{"dataPoints":[{"timeUnixNano":"1","asInt":"7"}]}}]}]}]}`), true)
	for _, b := range wirescantest.HostileBodies(4 << 10) {
		f.Add(b, false)
	}
	f.Fuzz(func(t *testing.T, body []byte, json bool) {
		ctype := contentProtobuf
		if json {
			ctype = contentJSON
		}
		var scanned wirescan.Tally
		var scanErr error
		if json {
			scanned.Decoded, scanErr = wirescan.JSON(body)
		} else {
			scanned, scanErr = wirescan.Proto(body)
		}
		msg, err := decode(ctype, body)
		if err != nil {
			return
		}
		if scanErr != nil && !errors.Is(scanErr, wirescan.ErrTooDeep) {
			t.Fatalf("the scan refused a body that decodes: %v", scanErr)
		}
		if counted := wirescan.Count(msg); !json && scanErr == nil && (counted.Resources != scanned.Resources ||
			counted.Scopes != scanned.Scopes || counted.Metrics != scanned.Metrics || counted.Points != scanned.Points) {
			t.Fatalf("the scan counted %+v, the decode holds %+v", scanned, counted)
		}
		now := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
		st, err := store.New(store.Options{MaxSeries: 50, MaxMemoryBytes: 64 << 10, MaxPointsPerRequest: 500, Now: func() time.Time { return now }}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			res, err := st.Ingest(msg.GetResourceMetrics(), anyNamespace{})
			if err != nil {
				continue
			}
			if n := store.CountPoints(msg.GetResourceMetrics()); res.Accepted+res.Rejected+res.Ignored != n {
				t.Fatalf("accepted %d + rejected %d + ignored %d != %d points", res.Accepted, res.Rejected, res.Ignored, n)
			}
		}
		for _, rm := range msg.GetResourceMetrics() {
			metrics := map[string]bool{}
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					metrics[m.GetName()] = true
				}
			}
			var ns string
			sel := map[string]string{}
			for _, kv := range rm.GetResource().GetAttributes() {
				switch kv.GetKey() {
				case store.AttrNamespace:
					ns = kv.GetValue().GetStringValue()
				case "k8s.deployment.name":
					sel[kv.GetKey()] = kv.GetValue().GetStringValue()
				}
			}
			for _, r := range st.Read(store.Query{Namespace: ns, Selector: sel, Metrics: metrics, Window: time.Minute}) {
				for _, x := range r.Series {
					if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) || x.Value < 0 {
						t.Fatalf("a value the store refuses was stored: %+v", x)
					}
					if x.Kind == store.Counter && x.HasRate && math.IsNaN(x.Rate) {
						t.Fatalf("NaN rate: %+v", x)
					}
					_, _ = x.Mean()
					_, _ = x.Quantile(0.99)
				}
			}
		}
	})
}
