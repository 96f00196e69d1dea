package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

func testConfig() config {
	return config{
		GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", SampleInterval: 200 * time.Millisecond,
		AllowedTargets: allow.DefaultSpec, IdleTimeout: time.Minute, ShutdownTimeout: 5 * time.Second, LogLevel: "info", LogFormat: "text",
		AuditSize: 100,
	}
}

// startServe serves cfg, logging to logs, until the test ends; a failed
// start fails the test.
func startServe(t *testing.T, cfg config, logs io.Writer) listening {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, cfg.Logger(logs), ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case addrs := <-ready:
		return addrs
	case err := <-done:
		done <- err
		t.Fatalf("serve: %v", err)
	}
	return listening{}
}

// dial is a plaintext gRPC connection to addr, closed when the test ends.
func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// getOK is the body of GET http://addr+path; anything but 200 fails the
// test.
func getOK(t *testing.T, addr, path string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
	}
	return body
}

// TestServeHostSignal is the fresh-machine promise: with no configuration
// the scaler serves a live signal of this machine at /scale, KEDA's client
// reads it, and SIGTERM drains cleanly.
func TestServeHostSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() { done <- serve(ctx, testConfig(), testConfig().Logger(&logs), ready) }()
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

	conn := dial(t, addrs.GRPC)
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

// A ScaledObject that selects a policy gets a replica count with target 1,
// and its decisions are served at /events and counted in /metrics.
func TestServePolicy(t *testing.T) {
	addrs := startServe(t, testConfig(), io.Discard)
	conn := dial(t, addrs.GRPC)
	keda := externalscaler.NewExternalScalerClient(conn)
	// The host source sees one replica (this machine); fixed keeps it.
	ref := &externalscaler.ScaledObjectRef{Name: "web", Namespace: "default", ScalerMetadata: map[string]string{"source": "host", "policy": "fixed"}}
	spec, err := keda.GetMetricSpec(context.Background(), ref)
	if err != nil || spec.MetricSpecs[0].TargetSizeFloat != 1 || spec.MetricSpecs[0].MetricName != "barometer-fixed" {
		t.Fatalf("GetMetricSpec: %v %v", spec, err)
	}
	got, err := keda.GetMetrics(context.Background(), &externalscaler.GetMetricsRequest{ScaledObjectRef: ref, MetricName: "barometer-fixed"})
	if err != nil || got.MetricValues[0].MetricValueFloat != 1 {
		t.Fatalf("GetMetrics: %v %v", got, err)
	}
	get := func(path string) string { return string(getOK(t, addrs.HTTP, path)) }
	var events []struct {
		Policy, Action, Reason string
	}
	if err := json.Unmarshal([]byte(get("/events/default/web")), &events); err != nil || len(events) == 0 ||
		events[0].Policy != "fixed" || events[0].Action != "no-op" || events[0].Reason != "fixed: no-op" {
		t.Fatalf("/events/default/web: %+v %v", events, err)
	}
	if m := get("/metrics"); !strings.Contains(m, `barometer_decisions_total{action="no-op",policy="fixed"`) {
		t.Errorf("/metrics has no decision counter for the fixed target")
	}
}

func TestRunCommands(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &out, io.Discard); err != nil || out.Len() == 0 {
		t.Fatalf("version: %v %q", err, out.String())
	}
	err := run(context.Background(), []string{"frobnicate"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "allowed: serve, simulate, keys, version") {
		t.Fatalf("unknown command: %v", err)
	}
}

// TestPolicyExamplesParse reads the trigger metadata of every ScaledObject
// under examples/policies/ with this binary's sources: each is accepted,
// selects the policy its file is named after, and the pool's members agree.
func TestPolicyExamplesParse(t *testing.T) {
	files, err := filepath.Glob("../../examples/policies/*.yaml")
	if err != nil || len(files) < 6 {
		t.Fatalf("examples: %v %v", files, err)
	}
	allowed, err := allow.Parse(allow.DefaultSpec)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.NewRegistry(context.Background(), registry.Config{Schema: newSchema(allowed, nil, scrape.Kube{}, nil, nil)})
	seen := map[string]bool{}
	for _, f := range files {
		triggers := triggerMetadata(t, f)
		if len(triggers) == 0 {
			t.Errorf("%s: no trigger metadata", f)
		}
		var specs []*trigger.Trigger
		for _, raw := range triggers {
			md, err := reg.Parse(raw)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			specs = append(specs, md)
			seen[md.Policy.Name] = true
			if want := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(f), ".yaml"), "-", "_"); md.Policy.Name != want {
				t.Errorf("%s selects %s", f, md.Policy.Name)
			}
		}
		if len(specs) == 2 { // the pool: members agree on all but the price
			a, b := specs[0], specs[1]
			if a.Policy.Pool == "" || a.Policy.Pool != b.Policy.Pool || a.PoolKey() != b.PoolKey() {
				t.Errorf("%s: pool members disagree: %+v / %+v", f, a.Policy, b.Policy)
			}
		}
	}
	for _, name := range trigger.PolicyNames() {
		if !seen[name] {
			t.Errorf("no example selects policy %s", name)
		}
	}
}

// triggerMetadata reads the key: value lines of each trigger's metadata
// block (indented under "metadata:" inside a trigger) of a YAML file. The
// examples are plain enough that this needs no YAML library, which the
// scaler's module does not carry; examples/check decodes them strictly.
func triggerMetadata(t *testing.T, path string) []map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	var cur map[string]string
	indent := -1
	for line := range strings.SplitSeq(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || trimmed == "---" {
			continue
		}
		ind := len(line) - len(strings.TrimLeft(line, " "))
		if cur != nil && ind <= indent {
			out, cur = append(out, cur), nil
		}
		if cur != nil {
			k, v, _ := strings.Cut(trimmed, ":")
			v = strings.TrimSpace(v)
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			cur[k] = v
			continue
		}
		if trimmed == "metadata:" && ind >= 6 { // a trigger's, not an object's
			cur, indent = map[string]string{}, ind
		}
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out
}

// SIGTERM with the health service's Watch and a reflection stream open:
// /readyz turns 503 at once and stays so for the shutdown delay, then every
// stream ends with OK and serve returns well inside the drain timeout, with
// no warning.
func TestServeShutdownEndsEveryStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := testConfig()
	cfg.ShutdownDelay = 500 * time.Millisecond
	ready := make(chan listening, 1)
	done := make(chan error, 1)
	var logs syncBuffer
	go func() { done <- serve(ctx, cfg, cfg.Logger(&logs), ready) }()
	addrs := <-ready
	conn := dial(t, addrs.GRPC)
	watch, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatal(err)
	}
	refl, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := refl.Recv(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	cancel()
	// The health service says NOT_SERVING first, on the open Watch.
	if msg, err := watch.Recv(); err != nil || msg.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health Watch at shutdown: %v %v", msg, err)
	}
	if resp, err := http.Get("http://" + addrs.HTTP + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz during the shutdown delay: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if _, err := watch.Recv(); err != io.EOF {
		t.Errorf("health Watch: %v, want a clean end", err)
	}
	if _, err := refl.Recv(); err != io.EOF {
		t.Errorf("reflection: %v, want a clean end", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < cfg.ShutdownDelay || took > cfg.ShutdownDelay+cfg.ShutdownTimeout/2 {
		t.Errorf("shutdown took %v (delay %v, timeout %v)", took, cfg.ShutdownDelay, cfg.ShutdownTimeout)
	}
	if strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "stopped") {
		t.Errorf("logs:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeConnectionProfiles: a profile file that cannot be used stops
// the start with an error naming the setting and never the credential;
// a good one is loaded and the scaler serves.
func TestServeConnectionProfiles(t *testing.T) {
	dir := t.TempDir()
	run := func(path string) error {
		cfg := testConfig()
		cfg.ConnectionProfiles = path
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ready := make(chan listening, 1)
		done := make(chan error, 1)
		go func() { done <- serve(ctx, cfg, cfg.Logger(io.Discard), ready) }()
		select {
		case <-ready:
			cancel()
			return <-done
		case err := <-done:
			return err
		}
	}
	if err := run(filepath.Join(dir, "absent.yaml")); err == nil || !strings.Contains(err.Error(), "BAROMETER_CONNECTION_PROFILES") {
		t.Errorf("missing profile file: %v", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("profiles: [{name: a, url: \"http://p\", namespaces: [\"*\"], bearer_token_file: nothere}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(bad); err == nil || !strings.Contains(err.Error(), "nothere") {
		t.Errorf("missing token file: %v", err)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("t0ken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte("profiles: [{name: a, url: \"http://p\", namespaces: [\"*\"], bearer_token_file: token}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(good); err != nil {
		t.Errorf("good profile file: %v", err)
	}
}
