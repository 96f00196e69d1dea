package metrics_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

// BenchmarkScrape1000Targets is one GET /metrics of a scaler running 1,000
// targets (ten namespaces of a hundred, the default caps), each sampled
// once: what a Prometheus scrape costs the process, and so what it takes
// from the gRPC reads beside it.
func BenchmarkScrape1000Targets(b *testing.B) {
	scripts := map[string]*registrytest.Script{}
	for i := range 100 {
		scripts[fmt.Sprint("s", i)] = busy()
	}
	f := newFixture(b, scripts)
	for ns := range 10 {
		for i := range 100 {
			f.acquire(b, registry.Ref{Namespace: fmt.Sprint("ns", ns), Name: fmt.Sprint("app", i)},
				map[string]string{"source": "scripted", "script": fmt.Sprint("s", i), "minReplicas": fmt.Sprint(ns)})
		}
	}
	h := metrics.New(f.reg).Handler()
	b.ReportAllocs()
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		size = rec.Body.Len()
		io.Copy(io.Discard, rec.Body)
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}
