package metrics_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/barometer-scaler/barometer/pkg/metrics"
)

// The interceptors count every RPC by method and code and time it, over a
// real loopback connection to a real grpc.Server (the standard health
// service stands in for the scaler's services).
func TestGRPCInterceptorsCountAndTimeRPCs(t *testing.T) {
	f := newFixture(t, nil)
	m := metrics.New(f.reg)

	srv := grpc.NewServer(m.ServerOptions()...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	m.InitializeGRPC(srv)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-served })

	// Before any call, InitializeGRPC has created the zero series.
	fams := scrape(t, m)
	check := map[string]string{"grpc_service": "grpc.health.v1.Health", "grpc_method": "Check"}
	if got := value(t, fams, "barometer_grpc_server_started_total", check); got != 0 {
		t.Fatalf("started before any call = %v, want 0", got)
	}

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := healthpb.NewHealthClient(conn)
	ctx := t.Context()

	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("Check: %v", err)
	}
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("Check(nope) = %v, want NotFound", err)
	}
	// A stream the client abandons ends Canceled on the server.
	sctx, cancel := context.WithCancel(ctx)
	stream, err := client.Watch(sctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("Watch first message: %v", err)
	}
	cancel()
	// Stop waits for the handlers, so the stream's outcome is recorded.
	srv.GracefulStop()

	fams = scrape(t, m)
	for _, c := range []struct {
		method, code string
		want         float64
	}{
		{"Check", "OK", 1},
		{"Check", "NotFound", 1},
		{"Watch", "Canceled", 1},
	} {
		lbl := map[string]string{"grpc_method": c.method, "grpc_code": c.code}
		if got := value(t, fams, "barometer_grpc_server_handled_total", lbl); got != c.want {
			t.Errorf("handled_total%v = %v, want %v", lbl, got, c.want)
		}
	}
	h, ok := find(fams, "barometer_grpc_server_handling_seconds", check)
	if !ok {
		t.Fatal("no handling-time histogram for Check")
	}
	if got := h.GetHistogram().GetSampleCount(); got != 2 {
		t.Errorf("Check latency observations = %d, want 2", got)
	}
	// Both calls carried a request; only the one that succeeded a reply.
	if got := value(t, fams, "barometer_grpc_server_msg_received_total", check); got != 2 {
		t.Errorf("Check messages received = %v, want 2", got)
	}
	if got := value(t, fams, "barometer_grpc_server_msg_sent_total", check); got != 1 {
		t.Errorf("Check messages sent = %v, want 1", got)
	}
	watch := map[string]string{"grpc_method": "Watch", "grpc_type": "server_stream"}
	if got := value(t, fams, "barometer_grpc_server_msg_sent_total", watch); got < 1 {
		t.Errorf("Watch messages sent = %v, want at least 1", got)
	}
}
