package scaler

import (
	"context"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"

	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// benchServer is a scaler over one scripted workload, called directly: the
// handler's own cost, without the network and gRPC's framing.
func benchServer(b *testing.B) *Server {
	b.Helper()
	w := registrytest.Returning(load(0.5, 2))
	// Named after the default source, so that a trigger without metadata
	// samples it too.
	sources := trigger.NewSchema(registrytest.Kind(trigger.DefaultSource, "default", func(string) *registrytest.Script { return w }))
	// The history is on, as with the status page (its default).
	reg := registrytest.NewRegistry(b, registry.Config{Schema: sources, DefaultInterval: time.Minute, History: sampling.DefaultHistory})
	return New(Config{Registry: reg})
}

// A repeated GetMetrics is a lookup of its parsed trigger and an atomic load
// of the snapshot, whatever its metadata: none at all (a trigger without
// metadata; it was parsed on every call, 583 allocations, until the
// registry cached it), only the scalerAddress KEDA adds, or a full
// trigger. The one allocation is the response.
//
//	go test -run xxx -bench GetMetrics -benchmem ./pkg/scaler/
func BenchmarkGetMetrics(b *testing.B) {
	typical := map[string]string{"source": trigger.DefaultSource, "scalerAddress": "barometer.keda.svc:6000",
		"targetPressure": "0.7", "minReplicas": "2", "sampleInterval": "1m", "activationValue": "0.1"}
	for _, c := range []struct {
		name string
		md   map[string]string
	}{
		{"none", nil},
		{"scalerAddress", map[string]string{"scalerAddress": "barometer.keda.svc:6000"}},
		{"typical", typical},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := benchServer(b)
			req := &externalscaler.GetMetricsRequest{MetricName: "barometer-pressure",
				ScaledObjectRef: &externalscaler.ScaledObjectRef{Name: "orders", Namespace: "shop", ScalerMetadata: c.md}}
			ctx := context.Background()
			_, _ = s.GetMetrics(ctx, req)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = s.GetMetrics(ctx, req)
			}
		})
	}
}
