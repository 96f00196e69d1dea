package store_test

import (
	"runtime"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store/storetest"
)

type allow struct{}

func (allow) Namespace(claimed string) (string, bool) { return claimed, true }

// BenchmarkIngest decodes a protobuf push of 100 pods (1,200 points, the
// contract's twelve series each) and stores it, every push one second
// after the last: the receiver's work per push, without the transport.
//
//	go test -run '^$' -bench Ingest -cpu 1 ./pkg/pressure/otlp/store/
func BenchmarkIngest(b *testing.B) {
	start := time.Now().Add(-24 * time.Hour)
	body, err := proto.Marshal(storetest.ContractPush(100, start))
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
		storetest.SetTime(req, start.Add(time.Duration(i)*time.Second))
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
		req := storetest.ContractPush(pods, start)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		reg := prometheus.NewRegistry()
		st, err := store.New(store.Options{MaxSeriesPerNamespace: 100_000, MaxMemoryBytes: 1 << 30}, reg)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 40 {
			storetest.SetTime(req, start.Add(time.Duration(2*i)*time.Second))
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
