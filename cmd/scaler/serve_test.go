package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/barometer-scaler/barometer/pkg/allow"
)

func testConfig() config {
	return config{
		GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", SampleInterval: 200 * time.Millisecond,
		AllowedTargets: allow.DefaultSpec, IdleTimeout: time.Minute, ShutdownTimeout: 5 * time.Second, LogLevel: "info", LogFormat: "text",
	}
}

// TestServeHostSignal is the fresh-machine promise: with no configuration
// the scaler serves a live signal of this machine at /scale, KEDA's client
// reads it, and SIGTERM drains cleanly.
func TestServeHostSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() { done <- serve(ctx, testConfig(), newLogger(testConfig(), &logs), ready) }()
	var addrs listening
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}

	var sig struct {
		ScaleValue float64 `json:"scaleValue"`
		Reason     string  `json:"reason"`
		SampledAt  *string `json:"sampledAt"`
		Stale      bool    `json:"stale"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addrs.HTTP + "/scale")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, &sig); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/scale never served a signal: %d %s", resp.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sig.SampledAt == nil || sig.Stale || !strings.Contains(sig.Reason, "across 1 replica(s)") {
		t.Fatalf("host signal: %+v", sig)
	}

	conn, err := grpc.NewClient(addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	keda := externalscaler.NewExternalScalerClient(conn)
	ref := &externalscaler.ScaledObjectRef{Name: "web", Namespace: "default", ScalerMetadata: map[string]string{"source": "host"}}
	if _, err := keda.GetMetrics(context.Background(), &externalscaler.GetMetricsRequest{ScaledObjectRef: ref, MetricName: "barometer-pressure"}); err != nil {
		t.Fatalf("GetMetrics: %v", err)
	}
	h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC health: %v %v", h, err)
	}
	stream, err := keda.StreamIsActive(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}

	cancel() // what SIGTERM does
	if _, err := stream.Recv(); err != io.EOF {
		t.Errorf("stream after shutdown: %v, want a clean end", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("no clean stop in the logs:\n%s", logs.String())
	}
}

func TestRunCommands(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &out, io.Discard); err != nil || out.Len() == 0 {
		t.Fatalf("version: %v %q", err, out.String())
	}
	err := run(context.Background(), []string{"frobnicate"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "allowed: serve, simulate, version") {
		t.Fatalf("unknown command: %v", err)
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Setenv("BAROMETER_SAMPLE_INTERVAL", "2s")
	t.Setenv("BAROMETER_DEFAULT_TARGET", "source=host;targetPressure=0.5")
	cfg, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GRPCAddr != ":6000" || cfg.HTTPAddr != ":8080" || cfg.SampleInterval != 2*time.Second ||
		cfg.DefaultTarget["targetPressure"] != "0.5" || cfg.DefaultTarget["source"] != "host" {
		t.Fatalf("config: %+v", cfg)
	}
	for env, val := range map[string]string{
		"BAROMETER_SAMPLE_INTERVAL":    "10ms",
		"BAROMETER_LOG_FORMAT":         "xml",
		"BAROMETER_LOG_LEVEL":          "loud",
		"BAROMETER_TLS_CERT_FILE":      "/only/cert",
		"BAROMETER_TLS_CLIENT_CA_FILE": "/ca",
	} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, val)
			if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), "BAROMETER_") {
				t.Fatalf("%s=%s accepted: %v", env, val, err)
			}
		})
	}
}
