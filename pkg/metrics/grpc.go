package metrics

import (
	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
)

// newGRPCMetrics counts and times every RPC by service, method, type and
// code (barometer_grpc_server_started_total, ..._handled_total,
// ..._msg_received_total, ..._msg_sent_total, ..._handling_seconds).
//
// The handling-time histogram uses the default buckets (5 ms to 10 s): a
// unary call answers from the cached snapshot in well under a millisecond,
// and GetMetrics waits at most about a second for a warming-up target, so
// both land inside them. A stream's "handling time" is its whole life and
// lands in +Inf, which is honest: streams are counted, not timed.
func newGRPCMetrics() *grpcprom.ServerMetrics {
	return grpcprom.NewServerMetrics(
		grpcprom.WithServerCounterOptions(grpcprom.WithNamespace(Namespace)),
		grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramNamespace(Namespace)),
	)
}

// ServerOptions installs both interceptors. They are chained, so further
// grpc.ChainUnaryInterceptor / grpc.ChainStreamInterceptor options passed to
// grpc.NewServer add to them instead of replacing them.
func (m *Metrics) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(m.grpc.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(m.grpc.StreamServerInterceptor()),
	}
}

// InitializeGRPC creates the zero-valued series of every method registered
// on s (a *grpc.Server, after all services are registered), so that rate()
// and absent() see a method before its first call.
func (m *Metrics) InitializeGRPC(s reflection.ServiceInfoProvider) {
	m.grpc.InitializeMetrics(s)
}
