package check

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	appsv1 "k8s.io/api/apps/v1"
)

// TestProbesAnswer asks the scaler, built as the image builds it, what the
// chart's probes ask: the gRPC health service kubelet's grpc liveness probe
// calls (service "", the probe's default) must answer SERVING, and
// /livez and /readyz must answer 200. With the chart rendered, every
// Deployment's grpc probe must name no service other than "".
func TestProbesAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not starting the scaler")
	}
	grpcAddr, httpAddr := startScaler(t)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("grpc.health.v1.Health/Check: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("grpc.health.v1.Health/Check = %v, want SERVING", resp.GetStatus())
	}
	waitHTTP(t, "http://"+httpAddr+"/livez")
	waitHTTP(t, "http://"+httpAddr+"/readyz")

	var grpcProbes int
	for _, f := range envFiles(renderedEnv) {
		docs, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			dep, ok := d.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			for _, c := range dep.Spec.Template.Spec.Containers {
				if p := c.LivenessProbe; p != nil && p.GRPC != nil {
					grpcProbes++
					if p.GRPC.Service != nil && *p.GRPC.Service != "" {
						t.Errorf("%s: liveness probe asks gRPC health service %q; the scaler reports only \"\"", d.Where(), *p.GRPC.Service)
					}
				}
			}
		}
	}
	if len(envFiles(renderedEnv)) > 0 && grpcProbes == 0 {
		t.Error("no rendered Deployment has a grpc liveness probe (the chart's default without TLS)")
	}
}
