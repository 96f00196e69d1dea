package scaler

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/tlsreload"
	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// load is n replicas at CPU utilisation cpu: what a scripted workload
// reports. Scripted workloads stand in for real ones only because the
// scaler's contract with KEDA is what is under test here; the sources have
// their own tests against real targets.
func load(cpu float64, n int) pressure.Observation {
	var obs pressure.Observation
	for i := range n {
		obs.Replicas = append(obs.Replicas, pressure.ReplicaObservation{Name: string(rune('a' + i)), CPUUtilisation: cpu})
	}
	return obs
}

// harness is a scaler on a real loopback gRPC server with KEDA's client.
type harness struct {
	mu        sync.Mutex
	workloads map[string]*registrytest.Script
	reg       *registry.Registry
	srv       *Server
	grpc      *grpc.Server
	addr      string
	client    externalscaler.ExternalScalerClient
}

// workload returns the script of the named workload (metadata key
// "script"), made on first use at CPU 0.5 across 2 replicas.
func (h *harness) workload(name string) *registrytest.Script {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.workloads[name]
	if !ok {
		w = registrytest.Returning(load(0.5, 2))
		h.workloads[name] = w
	}
	return w
}

func newHarness(t *testing.T, opts ...grpc.ServerOption) *harness {
	t.Helper()
	h := &harness{workloads: map[string]*registrytest.Script{}}
	sources := trigger.NewSchema(registrytest.Kind("workload", "default", h.workload))
	h.reg = registrytest.NewRegistry(t, registry.Config{Schema: sources, DefaultInterval: 50 * time.Millisecond})
	h.srv = New(Config{Registry: h.reg, WarmUpWait: 300 * time.Millisecond})
	h.grpc = grpc.NewServer(opts...)
	externalscaler.RegisterExternalScalerServer(h.grpc, h.srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = lis.Addr().String()
	go func() { _ = h.grpc.Serve(lis) }()
	t.Cleanup(func() {
		h.srv.Shutdown()
		h.grpc.GracefulStop()
	})
	h.client = dial(t, h.addr, insecure.NewCredentials())
	return h
}

func dial(t *testing.T, addr string, creds credentials.TransportCredentials) externalscaler.ExternalScalerClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return externalscaler.NewExternalScalerClient(conn)
}

func ref(name string, md map[string]string) *externalscaler.ScaledObjectRef {
	full := map[string]string{"source": "workload", "scalerAddress": "barometer.keda.svc:6000"}
	for k, v := range md {
		full[k] = v
	}
	return &externalscaler.ScaledObjectRef{Name: name, Namespace: "shop", ScalerMetadata: full}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestGetMetricSpec(t *testing.T) {
	h := newHarness(t)
	got, err := h.client.GetMetricSpec(ctxT(t), ref("orders", nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.MetricSpecs) != 1 || got.MetricSpecs[0].MetricName != "barometer-pressure" ||
		got.MetricSpecs[0].TargetSizeFloat != 0.7 || got.MetricSpecs[0].TargetSize != 1 {
		t.Fatalf("default spec: %v", got)
	}
	got, err = h.client.GetMetricSpec(ctxT(t), ref("orders", map[string]string{"targetPressure": "2.6", "metricName": "orders-pressure"}))
	if err != nil {
		t.Fatal(err)
	}
	if s := got.MetricSpecs[0]; s.MetricName != "orders-pressure" || s.TargetSizeFloat != 2.6 || s.TargetSize != 3 {
		t.Fatalf("tuned spec: %v", s)
	}
}

func TestInvalidMetadata(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		md      map[string]string
		wantKey string
	}{
		{map[string]string{"surprise": "1"}, `"surprise"`},
		{map[string]string{"targetPressure": "lots"}, `"targetPressure"`},
		{map[string]string{"targetPressure": "0"}, `"targetPressure"`},
		{map[string]string{"targetPressure": "NaN"}, `"targetPressure"`},
		{map[string]string{"activationValue": "-1"}, `"activationValue"`},
		{map[string]string{"minReplicas": "1.5"}, `"minReplicas"`},
		{map[string]string{"sampleInterval": "5"}, `"sampleInterval"`},
		{map[string]string{"ewmaHalfLife": "soon"}, `"ewmaHalfLife"`},
		{map[string]string{"scaleInGateWindow": "-1m"}, `"scaleInGateWindow"`},
		{map[string]string{"resourceScaleInThreshold": "1.2"}, `"resourceScaleInThreshold"`},
		{map[string]string{"splitAwareScaleIn": "maybe"}, `"splitAwareScaleIn"`},
		{map[string]string{"source": "crystal-ball"}, `"source"`},
		{map[string]string{"metricName": "Bad_Name"}, `"metricName"`},
		{map[string]string{"floor": "ceiling"}, `"floor"`},
	}
	for _, tt := range tests {
		r := ref("orders", tt.md)
		calls := map[string]error{}
		_, calls["GetMetricSpec"] = h.client.GetMetricSpec(ctxT(t), r)
		_, calls["GetMetrics"] = h.client.GetMetrics(ctxT(t), &externalscaler.GetMetricsRequest{ScaledObjectRef: r, MetricName: "barometer-pressure"})
		_, calls["IsActive"] = h.client.IsActive(ctxT(t), r)
		stream, err := h.client.StreamIsActive(ctxT(t), r)
		if err == nil {
			_, err = stream.Recv()
		}
		calls["StreamIsActive"] = err
		for call, err := range calls {
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tt.wantKey) {
				t.Errorf("%v: %s = %v, want InvalidArgument naming %s", tt.md, call, err, tt.wantKey)
			}
		}
	}
	// KEDA's own keys are accepted and ignored.
	if _, err := h.client.GetMetricSpec(ctxT(t), ref("orders", map[string]string{"enableTLS": "true", "unsafeSsl": "false"})); err != nil {
		t.Errorf("KEDA keys refused: %v", err)
	}
}

func TestGetMetricsAndIsActive(t *testing.T) {
	h := newHarness(t)
	w := h.workload("shop")
	w.Set(load(0.6, 3))
	r := ref("orders", map[string]string{"script": "shop", "activationValue": "1.5", "profile": "responsive"})
	got, err := h.client.GetMetrics(ctxT(t), &externalscaler.GetMetricsRequest{ScaledObjectRef: r, MetricName: "barometer-pressure"})
	if err != nil {
		t.Fatal(err)
	}
	if v := got.MetricValues[0]; v.MetricName != "barometer-pressure" || !near(v.MetricValueFloat, 1.8) || v.MetricValue != 2 {
		t.Fatalf("metric value: %v", v)
	}
	active, err := h.client.IsActive(ctxT(t), r)
	if err != nil || !active.Result {
		t.Fatalf("IsActive at 1.8 > 1.5: %v %v", active, err)
	}
	r.ScalerMetadata["activationValue"] = "1.8"
	active, err = h.client.IsActive(ctxT(t), r)
	if err != nil || active.Result {
		t.Fatalf("IsActive at 1.8 with activationValue 1.8: %v %v", active, err)
	}
	_, err = h.client.GetMetrics(ctxT(t), &externalscaler.GetMetricsRequest{ScaledObjectRef: r, MetricName: "other"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown metric name: %v", err)
	}
}

func TestUnavailableWhileWarmingUp(t *testing.T) {
	h := newHarness(t)
	w := h.workload("slow")
	hold := make(chan struct{})
	w.SetFunc(func(ctx context.Context) (pressure.Observation, error) {
		select {
		case <-hold:
			return load(0.5, 2), nil
		case <-ctx.Done():
			return pressure.Observation{}, ctx.Err()
		}
	})
	// A long interval gives the held first sample a long budget, so the
	// wait below is the scaler's warm-up wait, not a failed sample.
	r := ref("slow", map[string]string{"script": "slow", "sampleInterval": "5s"})
	start := time.Now()
	_, err := h.client.GetMetrics(ctxT(t), &externalscaler.GetMetricsRequest{ScaledObjectRef: r, MetricName: "barometer-pressure"})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "warming up") {
		t.Fatalf("GetMetrics before the first sample: %v", err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("answered after %v without waiting for the first sample", waited)
	}
	// GetMetricSpec never fails for sampling problems.
	if _, err := h.client.GetMetricSpec(ctxT(t), r); err != nil {
		t.Fatalf("GetMetricSpec while warming up: %v", err)
	}
	close(hold)
	if _, err := h.client.GetMetrics(ctxT(t), &externalscaler.GetMetricsRequest{ScaledObjectRef: r, MetricName: "barometer-pressure"}); err != nil {
		t.Fatalf("after the first sample: %v", err)
	}
}

func TestUnavailableWhenStale(t *testing.T) {
	h := newHarness(t)
	w := h.workload("flaky")
	r := ref("flaky", map[string]string{"script": "flaky"})
	req := &externalscaler.GetMetricsRequest{ScaledObjectRef: r, MetricName: "barometer-pressure"}
	if _, err := h.client.GetMetrics(ctxT(t), req); err != nil {
		t.Fatal(err)
	}
	w.Fail(errors.New("workload unreachable"))
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := h.client.GetMetrics(ctxT(t), req)
		if status.Code(err) == codes.Unavailable {
			if !strings.Contains(err.Error(), "stale") || !strings.Contains(err.Error(), "workload unreachable") {
				t.Fatalf("stale error does not say why: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never stale: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := h.client.IsActive(ctxT(t), r); status.Code(err) != codes.Unavailable {
		t.Fatalf("IsActive on a stale signal: %v", err)
	}
	if _, err := h.client.GetMetricSpec(ctxT(t), r); err != nil {
		t.Fatalf("GetMetricSpec on a stale signal: %v", err)
	}
}

func TestStreamIsActive(t *testing.T) {
	h := newHarness(t)
	w := h.workload("push")
	w.Set(load(0, 2))
	stream, err := h.client.StreamIsActive(ctxT(t), ref("push", map[string]string{"script": "push", "profile": "responsive"}))
	if err != nil {
		t.Fatal(err)
	}
	recv := func() bool {
		t.Helper()
		msg, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		return msg.Result
	}
	if recv() {
		t.Fatal("initial state should be inactive at zero pressure")
	}
	// Many samples pass at zero pressure; nothing is sent until it changes
	// (a repeated false would be the next message, instead of true).
	served, err := h.reg.Serving(registry.Ref{Namespace: "shop", Name: "push"})
	if err != nil {
		t.Fatal(err)
	}
	tg := served.Target
	registrytest.WaitSamples(t, tg, tg.Load().Samples+5)
	w.Set(load(0.9, 2))
	if !recv() {
		t.Fatal("second message should be the change to active")
	}
	// Still active for more samples: a repeated true would come before the
	// end of the stream.
	registrytest.WaitSamples(t, tg, tg.Load().Samples+5)
	h.srv.Shutdown()
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("after repeated samples and shutdown: %v, want io.EOF (clean end, no repeated true)", err)
	}
}

func TestStreamMetricSpec(t *testing.T) {
	h := newHarness(t)
	r := ref("spec", map[string]string{"targetPressure": "0.5"})
	stream, err := h.client.StreamMetricSpec(ctxT(t), r)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	unary, _ := h.client.GetMetricSpec(ctxT(t), r)
	if len(msg.MetricSpecs) != 1 || msg.MetricSpecs[0].TargetSizeFloat != unary.MetricSpecs[0].TargetSizeFloat ||
		msg.MetricSpecs[0].MetricName != unary.MetricSpecs[0].MetricName {
		t.Fatalf("streamed spec %v disagrees with GetMetricSpec %v", msg, unary)
	}
	h.srv.Shutdown()
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("after shutdown: %v, want io.EOF", err)
	}
}

func TestStreamEndsWithClientContext(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := h.client.StreamIsActive(ctx, ref("gone", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v", err)
	}
}

func TestSamplersAreShared(t *testing.T) {
	h := newHarness(t)
	// Under the original profile the target is read-side only; the
	// responsive profile's saturation surge reads it, so there it splits.
	for _, r := range []*externalscaler.ScaledObjectRef{
		ref("a", map[string]string{"script": "s", "profile": "original"}),
		ref("b", map[string]string{"script": "s", "profile": "original", "targetPressure": "0.4", "activationValue": "1"}), // read-side only
		ref("c", map[string]string{"script": "s", "profile": "original", "ewmaHalfLife": "10s"}),                           // another computer
		ref("d", map[string]string{"script": "t", "profile": "original"}),                                                  // another source
	} {
		if _, err := h.client.GetMetricSpec(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(h.reg.List()); got != 3 {
		t.Fatalf("%d samplers, want 3", got)
	}
}

func TestTLS(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.Issue(t, "barometer", "127.0.0.1")
	tlstest.WriteFiles(t, dir, map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": ca.CertPEM})
	files := tlsreload.Files{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}

	t.Run("server TLS", func(t *testing.T) {
		cfg, err := tlsreload.NewServerConfig(ctxT(t), files, nil)
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, grpc.Creds(credentials.NewTLS(cfg)))
		client := dial(t, h.addr, credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}))
		if _, err := client.GetMetricSpec(ctxT(t), ref("tls", nil)); err != nil {
			t.Fatalf("TLS client: %v", err)
		}
		if _, err := h.client.GetMetricSpec(ctxT(t), ref("plain", nil)); err == nil {
			t.Fatal("a plaintext client reached a TLS server")
		}
	})

	t.Run("mutual TLS", func(t *testing.T) {
		mtls := files
		mtls.ClientCAFile = filepath.Join(dir, "ca.crt")
		cfg, err := tlsreload.NewServerConfig(ctxT(t), mtls, nil)
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, grpc.Creds(credentials.NewTLS(cfg)))
		keda := dial(t, h.addr, credentials.NewTLS(&tls.Config{
			RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12,
			Certificates: []tls.Certificate{ca.IssueKeyPair(t, "keda-operator")},
		}))
		if _, err := keda.GetMetricSpec(ctxT(t), ref("mtls", nil)); err != nil {
			t.Fatalf("client with a certificate: %v", err)
		}
		anonymous := dial(t, h.addr, credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}))
		if _, err := anonymous.GetMetricSpec(ctxT(t), ref("mtls", nil)); status.Code(err) != codes.Unavailable {
			t.Fatalf("client without a certificate: %v, want refused", err)
		}
	})
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
