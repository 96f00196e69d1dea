package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
)

// A handler's plain error is counted under the code the gRPC server sends
// the client for it: a context's error as Canceled or DeadlineExceeded,
// anything else as Unknown. A method Initialize never saw is counted too.
func TestUnaryCountsTheCodeTheClientReceives(t *testing.T) {
	g := NewGRPCMetrics()
	info := &grpc.UnaryServerInfo{FullMethod: "/shop.Orders/Place"}
	for _, err := range []error{context.DeadlineExceeded, fmt.Errorf("wrapped: %w", context.Canceled), errors.New("boom"), nil} {
		_, _ = g.unary(t.Context(), nil, info, func(context.Context, any) (any, error) { return nil, err })
	}
	for code, want := range map[string]float64{"DeadlineExceeded": 1, "Canceled": 1, "Unknown": 1, "OK": 1, "Internal": 0} {
		got := testutil.ToFloat64(g.handled.With(prometheus.Labels{"grpc_type": "unary", "grpc_service": "shop.Orders", "grpc_method": "Place", "grpc_code": code}))
		if got != want {
			t.Errorf("handled_total{grpc_code=%q} = %v, want %v", code, got, want)
		}
	}
	if got := testutil.ToFloat64(g.started.WithLabelValues("unary", "shop.Orders", "Place")); got != 4 {
		t.Errorf("started_total = %v, want 4", got)
	}
}
