package metrics

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The unary interceptor's own cost around a handler that does nothing: a
// map read, four counter adds and a histogram observation, no allocation.
// Before its series were pre-resolved (the go-grpc-middleware provider)
// it was about 1.5 µs and 2 allocations a call.
//
//	go test -run xxx -bench UnaryInterceptor -benchmem ./pkg/metrics/
func BenchmarkUnaryInterceptor(b *testing.B) {
	failed := status.Error(codes.Unavailable, "warming up")
	for _, c := range []struct {
		name string
		err  error
	}{
		{"ok", nil},
		{"unavailable", failed},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := NewGRPCMetrics()
			info := &grpc.UnaryServerInfo{FullMethod: "/externalscaler.ExternalScaler/GetMetrics"}
			handler := func(context.Context, any) (any, error) { return nil, c.err }
			ctx := context.Background()
			_, _ = g.unary(ctx, nil, info, handler)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = g.unary(ctx, nil, info, handler)
			}
		})
	}
}
