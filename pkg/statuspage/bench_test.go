package statuspage_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/statuspage"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// benchRegistry runs targets scripted targets, one ScaledObject each, every
// one sampled samples times with the history on.
func benchRegistry(b *testing.B, targets, samples int) *registry.Registry {
	clock := samplingtest.NewFakeClock(time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC))
	scripts := map[string]*registrytest.Script{}
	reg := registrytest.NewRegistry(b, registry.Config{
		Schema:          trigger.NewSchema(registrytest.Kind("script", "x", func(name string) *registrytest.Script { return scripts[name] })),
		DefaultInterval: 5 * time.Second, History: sampling.DefaultHistory, Clock: clock,
		Limits: registry.Limits{Targets: targets, TargetsPerNamespace: targets},
	})
	var all []*registry.Target
	for i := range targets {
		name := fmt.Sprintf("w%04d", i)
		scripts[name] = registrytest.Returning(pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}}})
		tg, _, err := reg.Resolve(registry.Ref{Namespace: "bench", Name: name}, map[string]string{"source": "script", "script": name})
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, tg)
	}
	for n := 1; n <= samples; n++ {
		if n > 1 {
			clock.Tick(b, 5*time.Second)
		}
		for _, tg := range all {
			registrytest.WaitSamples(b, tg, uint64(n))
		}
	}
	return reg
}

func benchPage(b *testing.B, reg *registry.Registry, path string) {
	h := statuspage.New(statuspage.Config{Registry: reg})
	req := httptest.NewRequest(http.MethodGet, path, nil)
	mux := http.NewServeMux() // as httpapi routes it
	mux.Handle("/status", h)
	mux.Handle("/status/{namespace}/{name}", h)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d", path, w.Code)
		}
		size = w.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/page")
}

// BenchmarkStatusPage is what one page request costs: the listing of 1,000
// targets, and one ScaledObject's page with a full history (the newest
// samples in full and every bucket filled: 3,720 samples).
func BenchmarkStatusPage(b *testing.B) {
	b.Run("list/1000targets", func(b *testing.B) {
		benchPage(b, benchRegistry(b, 1000, 1), "/status")
	})
	b.Run("object/fullhistory", func(b *testing.B) {
		benchPage(b, benchRegistry(b, 1, sampling.DefaultHistory+sampling.HistoryBuckets*sampling.BucketSamples), "/status/bench/w0000")
	})
}
