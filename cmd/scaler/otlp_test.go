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
	metricapi "go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// TestServeOTLPPush is the receiver wired into serve: a pod pushing with
// the real OTel SDK exporter (gRPC, then HTTP) is read by a ScaledObject
// of its namespace through the otlp source, over KEDA's gRPC; the same
// selector in another namespace reads nothing; the receiver's metrics are
// served with the rest.
func TestServeOTLPPush(t *testing.T) {
	addrs := serveOTLP(t, map[string]string{"shop.token": "t0ken-of-shop\n",
		"credentials.yaml": "credentials: [{name: shop, token_file: shop.token, namespaces: [shop]}]\n"})
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

	conn := dial(t, addrs.GRPC)
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

// serveOTLP serves with the OTLP receiver on loopback, its credentials
// file credentials.yaml among files, until the test ends.
func serveOTLP(t *testing.T, files map[string]string) listening {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig()
	cfg.OTLPGRPCAddr, cfg.OTLPHTTPAddr, cfg.OTLPCredentials = "127.0.0.1:0", "127.0.0.1:0", filepath.Join(dir, "credentials.yaml")
	return startServe(t, cfg, io.Discard)
}

// Without a receiver the otlp source is refused as invalid metadata,
// saying how to turn it on; with one, a missing credentials file stops
// the start naming the setting.
func TestServeOTLPOff(t *testing.T) {
	conn := dial(t, startServe(t, testConfig(), io.Discard).GRPC)
	ref := &externalscaler.ScaledObjectRef{Name: "shop", Namespace: "shop", ScalerMetadata: map[string]string{"source": "otlp", "resourceSelector": "service.name=shop"}}
	_, err := externalscaler.NewExternalScalerClient(conn).GetMetricSpec(context.Background(), ref)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "BAROMETER_OTLP_GRPC_ADDR") {
		t.Errorf("otlp with the receiver off: %v", err)
	}

	cfg := testConfig()
	cfg.OTLPHTTPAddr, cfg.OTLPCredentials = "127.0.0.1:0", filepath.Join(t.TempDir(), "absent.yaml")
	if err := serve(context.Background(), cfg, cfg.Logger(io.Discard), nil); err == nil || !strings.Contains(err.Error(), "BAROMETER_OTLP_CREDENTIALS") {
		t.Errorf("missing credentials file: %v", err)
	}
}

// TestServeOTLPSlowTenant: one tenant holding every push it may with
// bodies that never end is told to retry its next, while another tenant's
// pushes, over gRPC and HTTP, are stored and read by KEDA's GetMetrics as
// they come.
func TestServeOTLPSlowTenant(t *testing.T) {
	addrs := serveOTLP(t, map[string]string{"shop.token": "t0ken-of-shop", "slow.token": "t0ken-of-slow",
		"credentials.yaml": "credentials: [{name: shop, token_file: shop.token, namespaces: [shop]}, {name: slow, token_file: slow.token, namespaces: [slow]}]\n"})
	slowPush := func(body io.Reader) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addrs.OTLPHTTP+"/v1/metrics", body)
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Authorization", "Bearer t0ken-of-slow")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil
		}
		resp.Body.Close()
		return resp
	}
	// The slow tenant's two bodies: a byte, then nothing until the end.
	for range 2 {
		pr, pw := io.Pipe()
		defer pw.Close()
		go func() { _, _ = pw.Write([]byte{0x0a}) }()
		go slowPush(pr)
	}
	metric := func(name string) string {
		resp, err := http.Get("http://" + addrs.HTTP + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for line := range strings.SplitSeq(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				return v
			}
		}
		return ""
	}
	for deadline := time.Now().Add(30 * time.Second); metric("barometer_otlp_requests_open") != "2"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow tenant's bodies were never held")
		}
	}
	if resp := slowPush(strings.NewReader("")); resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the slow tenant's third push: %v, want 429", resp)
	}

	auth := map[string]string{"authorization": "Bearer t0ken-of-shop"}
	grpcExp, err := otlpmetricgrpc.New(context.Background(), otlpmetricgrpc.WithEndpoint(addrs.OTLPGRPC), otlpmetricgrpc.WithInsecure(), otlpmetricgrpc.WithHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	httpExp, err := otlpmetrichttp.New(context.Background(), otlpmetrichttp.WithEndpoint(addrs.OTLPHTTP), otlpmetrichttp.WithInsecure(), otlpmetrichttp.WithHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	type pod struct {
		mp     *sdkmetric.MeterProvider
		memory metricapi.Float64Gauge
	}
	var pods []pod
	for i, exp := range []sdkmetric.Exporter{grpcExp, httpExp} {
		mp := sdkmetric.NewMeterProvider(
			sdkmetric.WithResource(resource.NewSchemaless(attribute.String("k8s.namespace.name", "shop"),
				attribute.String("k8s.deployment.name", "shop"), attribute.String("k8s.pod.name", []string{"shop-grpc", "shop-http"}[i]))),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		limit, _ := mp.Meter("shop").Float64Gauge(exposition.MemoryLimitBytes)
		limit.Record(context.Background(), 100<<20)
		memory, _ := mp.Meter("shop").Float64Gauge(exposition.MemoryBytes)
		pods = append(pods, pod{mp, memory})
	}
	conn := dial(t, addrs.GRPC)
	keda := externalscaler.NewExternalScalerClient(conn)
	ref := &externalscaler.ScaledObjectRef{Name: "shop", Namespace: "shop",
		ScalerMetadata: map[string]string{"source": "otlp", "resourceSelector": "k8s.deployment.name=shop", "sampleInterval": "1s", "maxAge": "2s"}}
	// Each push raises both pods' memory; the served value follows. The
	// pods push on while they wait, as exporters do (a scaler that has
	// just started reads nobody before maxAge).
	var last float64
	for _, used := range []float64{20 << 20, 50 << 20, 90 << 20} {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			for _, p := range pods {
				p.memory.Record(context.Background(), used)
				if err := p.mp.ForceFlush(context.Background()); err != nil {
					t.Fatalf("shop's push beside the slow tenant's: %v", err)
				}
			}
			got, err := keda.GetMetrics(context.Background(), &externalscaler.GetMetricsRequest{ScaledObjectRef: ref, MetricName: "barometer-pressure"})
			if err == nil && got.MetricValues[0].MetricValueFloat > last {
				last = got.MetricValues[0].MetricValueFloat
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GetMetrics never read shop's push of %v bytes: %v %v (before: %v)", used, got, err, last)
			}
		}
	}
	if got := metric(`barometer_otlp_requests_refused_total{reason="credential_busy",transport="http"}`); got != "1" {
		t.Errorf("the slow tenant's refusal counted %q, want 1", got)
	}
}
