package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// TestServeOTLPPush is the receiver wired into serve: a pod pushing with
// the real OTel SDK exporter (gRPC, then HTTP) is read by a ScaledObject
// of its namespace through the otlp source, over KEDA's gRPC; the same
// selector in another namespace reads nothing; the receiver's metrics are
// served with the rest.
func TestServeOTLPPush(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("shop.token", "t0ken-of-shop\n")
	cfg := testConfig()
	cfg.OTLPGRPCAddr, cfg.OTLPHTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.OTLPCredentials = write("credentials.yaml", "credentials: [{name: shop, token_file: shop.token, namespaces: [shop]}]\n")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, cfg.Logger(io.Discard), ready) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var addrs listening
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	if addrs.OTLPGRPC == "" || addrs.OTLPHTTP == "" {
		t.Fatalf("OTLP listeners: %+v", addrs)
	}

	auth := map[string]string{"authorization": "Bearer t0ken-of-shop"}
	grpcExp, err := otlpmetricgrpc.New(context.Background(), otlpmetricgrpc.WithEndpoint(addrs.OTLPGRPC),
		otlpmetricgrpc.WithInsecure(), otlpmetricgrpc.WithHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	httpExp, err := otlpmetrichttp.New(context.Background(), otlpmetrichttp.WithEndpoint(addrs.OTLPHTTP),
		otlpmetrichttp.WithInsecure(), otlpmetrichttp.WithHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	for i, exp := range []sdkmetric.Exporter{grpcExp, httpExp} {
		pod := []string{"shop-grpc", "shop-http"}[i]
		mp := sdkmetric.NewMeterProvider(
			sdkmetric.WithResource(resource.NewSchemaless(attribute.String("k8s.namespace.name", "shop"),
				attribute.String("k8s.deployment.name", "shop"), attribute.String("k8s.pod.name", pod))),
			// Exporting every 100 ms, well within maxAge, as the README asks:
			// a scaler that has just started waits maxAge for every replica
			// to push before its first sample (docs/otlp.md).
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(100*time.Millisecond))))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		meter := mp.Meter("shop")
		for name, v := range map[string]float64{exposition.Activations: 1000, exposition.MemoryBytes: 1 << 20, exposition.MemoryLimitBytes: 4 << 20} {
			g, err := meter.Float64Gauge(name)
			if err != nil {
				t.Fatal(err)
			}
			g.Record(context.Background(), v)
		}
		if err := mp.ForceFlush(context.Background()); err != nil {
			t.Fatalf("push over %s: %v", pod, err)
		}
	}

	conn, err := grpc.NewClient(addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	keda := externalscaler.NewExternalScalerClient(conn)
	md := map[string]string{"source": "otlp", "resourceSelector": "k8s.deployment.name=shop", "sampleInterval": "1s", "maxAge": "2s"}
	getMetrics := func(ns string) (*externalscaler.GetMetricsResponse, error) {
		ref := &externalscaler.ScaledObjectRef{Name: "shop", Namespace: ns, ScalerMetadata: md}
		return keda.GetMetrics(context.Background(), &externalscaler.GetMetricsRequest{ScaledObjectRef: ref, MetricName: "barometer-pressure"})
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := getMetrics("shop")
		if err == nil && got.MetricValues[0].MetricValueFloat > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the otlp target never served the pushes: %v %v", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addrs.HTTP + "/scale/shop/shop")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "across 2 replica(s)") {
		t.Errorf("/scale/shop/shop: %s, want both pods' pushes", body)
	}

	// What shop pushed is not another namespace's, under the same names.
	deadline = time.Now().Add(10 * time.Second)
	for {
		_, err := getMetrics("billing")
		if status.Code(err) == codes.Unavailable && strings.Contains(err.Error(), "has pushed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("another namespace's target: %v, want Unavailable: no replica has pushed", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	resp, err = http.Get("http://" + addrs.HTTP + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`(?m)^barometer_otlp_points_accepted_total [1-9]`, `(?m)^barometer_otlp_requests_total\{code="OK",transport="grpc"\} [1-9]`, "(?m)^barometer_otlp_credential_file_errors_total 0$"} {
		if !regexp.MustCompile(want).Match(body) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Without a receiver the otlp source is refused as invalid metadata,
// saying how to turn it on; with one, a missing credentials file stops
// the start naming the setting.
func TestServeOTLPOff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, testConfig(), testConfig().Logger(io.Discard), ready) }()
	addrs := <-ready
	conn, err := grpc.NewClient(addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ref := &externalscaler.ScaledObjectRef{Name: "shop", Namespace: "shop", ScalerMetadata: map[string]string{"source": "otlp", "resourceSelector": "service.name=shop"}}
	_, err = externalscaler.NewExternalScalerClient(conn).GetMetricSpec(context.Background(), ref)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "BAROMETER_OTLP_GRPC_ADDR") {
		t.Errorf("otlp with the receiver off: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	cfg := testConfig()
	cfg.OTLPHTTPAddr, cfg.OTLPCredentials = "127.0.0.1:0", filepath.Join(t.TempDir(), "absent.yaml")
	if err := serve(context.Background(), cfg, cfg.Logger(io.Discard), nil); err == nil || !strings.Contains(err.Error(), "BAROMETER_OTLP_CREDENTIALS") {
		t.Errorf("missing credentials file: %v", err)
	}
}
