package store_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store/storetest"
)

// gauges is one pod of ns pushing n gauge series of metric at t, valued v.
func gauges(ns, pod, metric string, n int, t time.Time, v float64) []*metricspb.ResourceMetrics {
	var points []*metricspb.NumberDataPoint
	for i := range n {
		points = append(points, &metricspb.NumberDataPoint{TimeUnixNano: uint64(t.UnixNano()),
			Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}, Attributes: []*commonpb.KeyValue{storetest.Str("i", fmt.Sprint(i))}})
	}
	return []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{storetest.Str("k8s.namespace.name", ns), storetest.Str("service.name", "shop"), storetest.Str("k8s.pod.name", pod)}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: metric, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: points}}}}}},
	}}
}

// The store's memory is shared per namespace as its series are: a
// namespace stops at its cap, and the store's last eighth is kept for
// namespaces within their guaranteed share, so tenants filling the rest
// cannot take a newcomer's first series.
func TestMemorySharedPerNamespace(t *testing.T) {
	now := time.Now()
	// A gauge series costs about 420 bytes here: a namespace may hold
	// 64 KiB, the store 160 KiB (its last 20 KiB the reserve), and each
	// namespace is guaranteed 8 KiB.
	st, err := store.New(store.Options{MaxMemoryBytes: 160 << 10, MaxMemoryBytesPerNamespace: 64 << 10, GuaranteedMemoryBytes: 8 << 10,
		Now: func() time.Time { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	full := func(ns string) store.Result {
		t.Helper()
		res, err := st.Ingest(gauges(ns, "p", "big", 1000, now, 1), allow{})
		if err != nil || res.Accepted == 0 || res.Rejected == 0 {
			t.Fatalf("%s: %+v %v, want stored up to a cap", ns, res, err)
		}
		return res
	}
	res := full("greedy-1")
	if !strings.Contains(res.Message, "namespace's memory cap") {
		t.Fatalf("greedy-1 stopped by %q, want its own cap", res.Message)
	}
	if res, _ := st.Ingest(gauges("other", "p", "small", 10, now, 1), allow{}); res.Accepted != 10 {
		t.Fatalf("another namespace beside one at its cap: %+v", res)
	}
	// Two more tenants take the rest of the shared part.
	full("greedy-2")
	res = full("greedy-3")
	if !strings.Contains(res.Message, "store's memory cap") {
		t.Fatalf("greedy-3 stopped by %q, want the store's cap short of the reserve", res.Message)
	}
	// A newcomer still gets its guaranteed share from the reserve...
	res, _ = st.Ingest(gauges("newcomer", "p", "first", 100, now, 1), allow{})
	if res.Accepted < 15 || res.Accepted > 20 {
		t.Fatalf("a newcomer with the shared part full: %+v, want its guaranteed 8 KiB stored", res)
	}
	// ...which a greedy tenant cannot take.
	if res, _ := st.Ingest(gauges("greedy-1", "q", "more", 1, now, 1), allow{}); res.Accepted != 0 {
		t.Fatalf("a tenant past its guarantee took from the reserve: %+v", res)
	}
}

// The series caps follow the same rule: a newcomer's first series are
// stored from the reserve while the others filled the rest.
func TestSeriesReserve(t *testing.T) {
	now := time.Now()
	st, err := store.New(store.Options{MaxSeries: 80, MaxSeriesPerNamespace: 40, GuaranteedSeries: 5, Now: func() time.Time { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"a", "b"} {
		if res, _ := st.Ingest(gauges(ns, "p", "m", 40, now, 1), allow{}); res.Accepted+res.Rejected != 40 {
			t.Fatalf("%s: %+v", ns, res)
		}
	}
	// 70 of 80 held: the last eighth (10) is the reserve.
	res, _ := st.Ingest(gauges("c", "p", "m", 20, now, 1), allow{})
	if res.Accepted != 5 {
		t.Fatalf("a newcomer: %+v, want its 5 guaranteed series", res)
	}
}

// NaN, infinite and negative values are refused with their reason, and
// never replace the value stored (the receiver's tests count them); a
// delta UpDownCounter may step down, but
// not below 0.
func TestBadValuesRefused(t *testing.T) {
	now := time.Now()
	st, err := store.New(store.Options{Now: func() time.Time { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := st.Ingest(gauges("a", "p", "g", 1, now.Add(-time.Second), 0.5), allow{}); res.Accepted != 1 {
		t.Fatalf("%+v", res)
	}
	for i, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -50} {
		res, _ := st.Ingest(gauges("a", "p", "g", 1, now.Add(time.Duration(i)*time.Millisecond), v), allow{})
		if res.Rejected != 1 || res.Message == "" {
			t.Errorf("gauge %v: %+v, want refused with a reason", v, res)
		}
	}
	q := store.Query{Namespace: "a", Selector: map[string]string{"service.name": "shop"}, Metrics: map[string]bool{"g": true}, Window: time.Minute}
	if got := st.Read(q)[0].Series[0].Value; got != 0.5 {
		t.Errorf("stored %v, want the last good 0.5", got)
	}

	sum := func(sec int, v float64, monotonic bool) store.Result {
		t.Helper()
		rms := gauges("a", "p", "", 0, now, 0)
		ts := uint64(now.Add(time.Duration(sec) * time.Second).UnixNano())
		rms[0].ScopeMetrics[0].Metrics = []*metricspb.Metric{{Name: fmt.Sprint("sum", monotonic), Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
			IsMonotonic: monotonic, AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
			DataPoints: []*metricspb.NumberDataPoint{{TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}}}}}}
		res, err := st.Ingest(rms, allow{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	now = now.Add(time.Minute)
	if res := sum(-30, 5, false); res.Accepted != 1 {
		t.Fatalf("delta UpDownCounter +5: %+v", res)
	}
	if res := sum(-20, -3, false); res.Accepted != 1 {
		t.Fatalf("delta UpDownCounter -3 (total 2): %+v", res)
	}
	if res := sum(-10, -3, false); res.Rejected != 1 {
		t.Fatalf("delta UpDownCounter -3 (total -1): %+v, want refused", res)
	}
	if res := sum(-10, -3, true); res.Rejected != 1 {
		t.Fatalf("delta counter -3: %+v, want refused", res)
	}
}

// A point timed ahead within the skew is stored at its receive time: the
// on-time points after it are not lost, and a repeat of it is a
// duplicate, not a second delta.
func TestFuturePointStoredAtReceiveTime(t *testing.T) {
	now := time.Now()
	st, err := store.New(store.Options{Now: func() time.Time { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := store.Query{Namespace: "a", Selector: map[string]string{"service.name": "shop"}, Metrics: map[string]bool{"g": true}, Window: time.Minute}
	fast := gauges("a", "p", "g", 1, now.Add(50*time.Second), 7)
	res, _ := st.Ingest(fast, allow{})
	if res.Accepted != 1 || res.Retimed != 1 || !strings.Contains(res.Message, "clock") {
		t.Fatalf("a point 50 s ahead: %+v, want stored and the pusher warned", res)
	}
	if r := st.Read(q)[0]; !r.Newest.Equal(now) {
		t.Fatalf("stored at %v, want the receive time %v", r.Newest, now)
	}
	if res, _ := st.Ingest(fast, allow{}); res.Ignored != 1 {
		t.Fatalf("the same point again: %+v, want a duplicate", res)
	}
	now = now.Add(time.Second)
	if res, _ := st.Ingest(gauges("a", "p", "g", 1, now, 3), allow{}); res.Accepted != 1 {
		t.Fatalf("an on-time point after the fast one: %+v", res)
	}
	if x := st.Read(q)[0].Series[0]; x.Value != 3 || !x.At.Equal(now) {
		t.Fatalf("read %v at %v, want the on-time 3", x.Value, x.At)
	}
	// A few milliseconds ahead is drift: stored as received, no warning.
	now = now.Add(time.Second)
	if res, _ := st.Ingest(gauges("a", "p", "g", 1, now.Add(10*time.Millisecond), 4), allow{}); res.Retimed != 1 || res.Message != "" {
		t.Fatalf("a point 10 ms ahead: %+v, want stored at its receive time without a warning", res)
	}
}
