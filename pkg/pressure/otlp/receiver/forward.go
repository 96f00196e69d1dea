package receiver

import (
	"github.com/prometheus/client_golang/prometheus"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// Forwarder takes every push the receiver stored, with the grant it was
// stored under, for the scaler's other replicas (package peer), so that
// whichever replica a workload pushed to, every replica holds its points.
// It is called on the push's own goroutine and must not block.
type Forwarder interface {
	Forward(rms []*metricspb.ResourceMetrics, g store.Grant)
}

// Forward has every push the receiver will store handed to f too.
func (p *Push) Forward(f Forwarder) { p.cfg.Forward = f }

// Registerer takes collectors to register with the push path's own, when
// Listen does.
func (p *Push) Registerer() prometheus.Registerer { return &p.pending }
