package grpcstop

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// The health service's Watch and a reflection stream never end on their
// own; End ends both with OK, and a graceful stop then returns.
func TestEndEndsHealthWatchAndReflectionCleanly(t *testing.T) {
	streams := New()
	srv := grpc.NewServer(streams.ServerOption())
	healthpb.RegisterHealthServer(srv, grpchealth.NewServer())
	reflection.Register(srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()

	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatal(err)
	}
	refl, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := refl.Recv(); err != nil {
		t.Fatal(err)
	}

	streams.End()
	if _, err := watch.Recv(); err != io.EOF {
		t.Errorf("health Watch after End: %v, want a clean end (io.EOF)", err)
	}
	if _, err := refl.Recv(); err != io.EOF {
		t.Errorf("reflection after End: %v, want a clean end (io.EOF)", err)
	}
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("GracefulStop still waiting after End")
	}
}
