// Command constscaler is the baseline of bench/grpc.sh: a KEDA
// ExternalScaler, on KEDA's own generated package, that answers every call
// with a constant, so that Barometer's GetMetrics throughput can be read as
// a fraction of what the same gRPC stack does with no work at all.
//
//	go run ./bench/constscaler -addr 127.0.0.1:6101 [-metrics]
//
// What it shares with Barometer (cmd/scaler/serve.go): grpc-go from this
// module's go.mod, a plaintext listener (Barometer runs without TLS unless
// its BAROMETER_TLS_* files are set, and the bench sets none), no other
// grpc.ServerOption, the standard health service and reflection (ghz and
// grpcurl read the method from it).
//
// What differs, on purpose: by default it installs no interceptor, while
// Barometer chains pkg/metrics' Prometheus interceptor (counters and a
// handling-time histogram) in front of every call; the baseline is a
// constant answer, not a constant answer plus Barometer's instrumentation.
// -metrics installs the same interceptor (pkg/metrics.GRPCMetrics), to tell
// the interceptor's share of the gap from the handler's. It also serves no
// barometer.v1.SignalService, which GetMetrics never touches.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/barometer-scaler/barometer/pkg/metrics"
)

// The constant answer: the metric Barometer names, a value, a target.
const (
	metricName  = "barometer-pressure"
	metricValue = 0.5
	targetSize  = 0.7
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "constscaler:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:6101", "listen address (host:port)")
	withMetrics := flag.Bool("metrics", false, "install Barometer's Prometheus gRPC interceptor (pkg/metrics)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", *addr, err)
	}
	var opts []grpc.ServerOption
	var m *metrics.GRPCMetrics
	if *withMetrics {
		m = metrics.NewGRPCMetrics()
		if err := prometheus.NewRegistry().Register(m); err != nil {
			return fmt.Errorf("register gRPC metrics: %w", err)
		}
		opts = append(opts, m.ServerOptions()...)
	}
	srv := grpc.NewServer(opts...)
	externalscaler.RegisterExternalScalerServer(srv, constant{})
	healthpb.RegisterHealthServer(srv, grpchealth.NewServer())
	reflection.Register(srv)
	if m != nil {
		m.Initialize(srv)
	}

	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(lis) }()
	fmt.Fprintf(os.Stderr, "constscaler: serving on %s (metrics interceptor: %v)\n", lis.Addr(), *withMetrics)
	select {
	case <-ctx.Done():
		// Stop, not GracefulStop: open streams never end by themselves,
		// and a benchmark baseline has nothing to drain.
		srv.Stop()
		return nil
	case err := <-errs:
		if errors.Is(err, grpc.ErrServerStopped) {
			return nil
		}
		return fmt.Errorf("serve: %w", err)
	}
}

// constant answers without reading its request. Each answer is a new
// message, as a real scaler's would be.
type constant struct {
	externalscaler.UnimplementedExternalScalerServer
}

func (constant) IsActive(context.Context, *externalscaler.ScaledObjectRef) (*externalscaler.IsActiveResponse, error) {
	return &externalscaler.IsActiveResponse{Result: true}, nil
}

// StreamIsActive sends the constant once, then holds the stream open until
// the caller leaves, as a push scaler with nothing new to say does.
func (constant) StreamIsActive(_ *externalscaler.ScaledObjectRef, stream grpc.ServerStreamingServer[externalscaler.IsActiveResponse]) error {
	if err := stream.Send(&externalscaler.IsActiveResponse{Result: true}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	<-stream.Context().Done()
	return nil
}

func (constant) GetMetricSpec(context.Context, *externalscaler.ScaledObjectRef) (*externalscaler.GetMetricSpecResponse, error) {
	return &externalscaler.GetMetricSpecResponse{MetricSpecs: []*externalscaler.MetricSpec{spec()}}, nil
}

func (constant) StreamMetricSpec(_ *externalscaler.ScaledObjectRef, stream grpc.ServerStreamingServer[externalscaler.GetMetricSpecResponse]) error {
	if err := stream.Send(&externalscaler.GetMetricSpecResponse{MetricSpecs: []*externalscaler.MetricSpec{spec()}}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	<-stream.Context().Done()
	return nil
}

func (constant) GetMetrics(context.Context, *externalscaler.GetMetricsRequest) (*externalscaler.GetMetricsResponse, error) {
	return &externalscaler.GetMetricsResponse{MetricValues: []*externalscaler.MetricValue{{
		MetricName:       metricName,
		MetricValue:      1, // the deprecated integer field, filled as Barometer fills it
		MetricValueFloat: metricValue,
	}}}, nil
}

func spec() *externalscaler.MetricSpec {
	return &externalscaler.MetricSpec{MetricName: metricName, TargetSize: 1, TargetSizeFloat: targetSize}
}
