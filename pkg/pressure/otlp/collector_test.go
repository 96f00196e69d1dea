package otlp_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"go.yaml.in/yaml/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/barometer-scaler/barometer/internal/otelcoltest"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

// These tests push through a real OpenTelemetry Collector (tools/otelcol,
// built by .ci/otelcol.sh) whose configuration is the README's collector
// pipeline (readmeCollectorConfig says what is changed and why): the OTel
// Go SDK pushes to the collector's OTLP receiver, the collector filters
// and batches and exports to a receiver of Barometer's with TLS, and the
// store is polled until the data is there.

// collectorCertName is the collector's client certificate's name, as the
// README's certificate credential names it.
const collectorCertName = "otel-collector.observability.svc"

// How the collector authenticates to Barometer, as the README offers.
const (
	authToken = "bearer token"
	authMTLS  = "mTLS"
	// authTokenHTTP is the token over OTLP/HTTP: the otlphttp exporter
	// in place of the README's otlp one, to Barometer's HTTP listener.
	authTokenHTTP = "bearer token, otlphttp"
)

// pipeline is Barometer's receiver (TLS, a client CA) behind a collector.
type pipeline struct {
	h         *harness
	collector *otelcoltest.Collector
}

func startPipeline(t *testing.T, auth string) pipeline {
	t.Helper()
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	serverCert, serverKey := ca.Issue(t, "barometer", "127.0.0.1")
	clientCert, clientKey := ca.Issue(t, collectorCertName)
	tlstest.WriteFiles(t, dir, map[string][]byte{
		"tls.crt": serverCert, "tls.key": serverKey, "ca.crt": ca.CertPEM,
		"collector.crt": clientCert, "collector.key": clientKey,
	})
	h := newHarness(t, store.Options{}, receiver.Config{
		TLSCertFile: filepath.Join(dir, "tls.crt"), TLSKeyFile: filepath.Join(dir, "tls.key"),
		ClientCAFile: filepath.Join(dir, "ca.crt"),
	}, `  - name: cluster-collector
    client_certificate: `+collectorCertName+`
    namespaces: [team-a]
`)
	files := collectorFiles{
		token: filepath.Join(h.dir, "a.token"), ca: filepath.Join(dir, "ca.crt"),
		cert: filepath.Join(dir, "collector.crt"), key: filepath.Join(dir, "collector.key"),
	}
	c := otelcoltest.Start(t, func(addr string) ([]byte, error) {
		return readmeCollectorConfig(t, addr, h, auth, files)
	})
	return pipeline{h: h, collector: c}
}

// sdk is the OTel SDK pushing res to the collector, over gRPC without TLS
// (a workload beside its collector), exporting when flushed.
func (p pipeline) sdk(t *testing.T, res *resource.Resource, delta bool) sdk {
	t.Helper()
	return newSDK(t, grpcExporterTo(t, p.collector.GRPCAddr, "", delta), res)
}

// read is the store's view of shop's pods in team-a.
func (p pipeline) read(metrics ...string) []store.Replica {
	want := map[string]bool{}
	for _, m := range metrics {
		want[m] = true
	}
	return p.h.store.Read(store.Query{Namespace: "team-a", Selector: map[string]string{"k8s.deployment.name": "shop"},
		Metrics: want, Window: time.Minute})
}

// seriesOf is pod's series of metric in reps, if any.
func seriesOf(reps []store.Replica, pod, metric string) (store.Series, bool) {
	for _, r := range reps {
		if r.Name != pod {
			continue
		}
		for _, x := range r.Series {
			if x.Metric == metric {
				return x, true
			}
		}
	}
	return store.Series{}, false
}

// waitFor polls cond until it holds, or fails t after timeout: the
// collector is a real process, which no synctest bubble holds, so the
// test waits for the store to change, bounded. The batch processor holds
// a push up to a second.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	const timeout = 30 * time.Second
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, what)
		}
		<-tick.C
	}
}

// The README's pipeline, with either credential it offers: the
// contract's gauges, counters and histogram reach the store as the SDK
// recorded them, and a metric outside the contract is dropped by the
// collector's filter before it leaves.
func TestCollectorREADMEPipeline(t *testing.T) {
	for _, auth := range []string{authToken, authMTLS, authTokenHTTP} {
		t.Run(auth, func(t *testing.T) {
			p := startPipeline(t, auth)
			s := p.sdk(t, podResource("team-a", "shop", "shop-1"), false)
			in := newInstruments(t, s.provider)
			other, err := s.provider.Meter("barometer-test").Float64Counter("http_server_requests_total")
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			in.recordContract(ctx)
			other.Add(ctx, 99)
			if err := s.flush(t); err != nil {
				t.Fatal(err)
			}
			// One export: once its histogram is stored, all of it is.
			waitFor(t, "no run-duration histogram stored", func() bool {
				_, ok := seriesOf(p.read(exposition.QueueRunDuration), "shop-1", exposition.QueueRunDuration)
				return ok
			})
			if x, ok := seriesOf(p.read("http_server_requests_total"), "shop-1", "http_server_requests_total"); ok {
				t.Errorf("a metric outside the contract passed the collector's filter: %+v", x)
			}
			obs, err := newSource(t, p.h, "team-a", "shop", time.Now, time.Minute).Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			checkContract(t, obs)
			x, _ := seriesOf(p.read(exposition.QueueRunDuration), "shop-1", exposition.QueueRunDuration)
			if x.Kind != store.Histogram || !slices.Equal(x.Bounds, []float64{0.1, 1, 10}) {
				t.Errorf("run duration = %+v, want a histogram of bounds 0.1, 1, 10", x)
			}
			if obs.MeasuredAt.IsZero() || obs.MeasuredAt.After(time.Now()) {
				t.Errorf("MeasuredAt = %v, want the SDK's own point time", obs.MeasuredAt)
			}
		})
	}
}

// Delta sums and histograms pass the collector as deltas, and the store
// adds them up.
func TestCollectorDeltaSums(t *testing.T) {
	p := startPipeline(t, authToken)
	s := p.sdk(t, podResource("team-a", "shop", "shop-1"), true)
	in := newInstruments(t, s.provider)
	ctx := context.Background()
	for i, step := range []struct {
		arrivals float64
		runs     []float64
	}{{5, []float64{0.05, 0.5}}, {3, []float64{5}}} {
		in.arrivals.Add(ctx, step.arrivals)
		for _, r := range step.runs {
			in.runs.Record(ctx, r)
		}
		if err := s.flush(t); err != nil {
			t.Fatal(err)
		}
		// Wait for each delta, so the second is not batched with the first.
		want := []float64{2, 3}[i]
		waitFor(t, fmt.Sprintf("delta %d: run count never reached %v", i, want), func() bool {
			x, ok := seriesOf(p.read(exposition.QueueRunDuration), "shop-1", exposition.QueueRunDuration)
			return ok && x.Count == want
		})
	}
	reps := p.read(exposition.QueueArrivals, exposition.QueueRunDuration)
	if x, _ := seriesOf(reps, "shop-1", exposition.QueueArrivals); x.Value != 8 {
		t.Errorf("arrivals = %+v, want the deltas 5 and 3 added up to 8", x)
	}
	x, _ := seriesOf(reps, "shop-1", exposition.QueueRunDuration)
	if math.Abs(x.Value-5.55) > 1e-9 || x.WindowCount != 3 {
		t.Errorf("run duration = %+v, want 3 runs of 5.55 s", x)
	}
}

// A restarted workload (a new meter provider for the same pod: its
// counters start again at zero, from a new start time) is a counter reset
// the collector passes through: what was counted before stays.
func TestCollectorCounterReset(t *testing.T) {
	p := startPipeline(t, authToken)
	ctx := context.Background()
	res := podResource("team-a", "shop", "shop-1")
	arrivals := func() float64 {
		x, _ := seriesOf(p.read(exposition.QueueArrivals), "shop-1", exposition.QueueArrivals)
		return x.Value
	}

	before := p.sdk(t, res, false)
	in := newInstruments(t, before.provider)
	in.arrivals.Add(ctx, 10)
	if err := before.flush(t); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first process's 10 arrivals never stored", func() bool { return arrivals() == 10 })
	if err := before.provider.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	after := p.sdk(t, res, false)
	in = newInstruments(t, after.provider)
	in.arrivals.Add(ctx, 2)
	if err := after.flush(t); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "after the restart, arrivals never read 10 + 2", func() bool { return arrivals() == 12 })
}

// Points a pusher repeats (a retried export) or sends late pass the
// collector unchanged; the store ignores them and counts why. The SDK
// cannot send them, so the OTLP client of the proto types does, to the
// collector.
func TestCollectorDuplicateAndOutOfOrder(t *testing.T) {
	p := startPipeline(t, authToken)
	conn, err := grpc.NewClient(p.collector.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := colmetrics.NewMetricsServiceClient(conn)
	start := time.Now().Add(-time.Minute)
	push := func(at time.Time, v float64) {
		t.Helper()
		_, err := client.Export(context.Background(), &colmetrics.ExportMetricsServiceRequest{
			ResourceMetrics: []*metricspb.ResourceMetrics{rm("team-a", "shop", "shop-1",
				counter(exposition.QueueArrivals, numberPoint(at, start, v)))},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ignored := func(reason string) float64 {
		return metricValue(t, p.h.reg, "barometer_otlp_points_ignored_total", "reason", reason)
	}
	stored := func() store.Series {
		x, _ := seriesOf(p.read(exposition.QueueArrivals), "shop-1", exposition.QueueArrivals)
		return x
	}
	t2 := start.Add(50 * time.Second)
	push(t2, 5)
	waitFor(t, "the first point never stored", func() bool { return stored().Value == 5 })
	push(t2, 5)
	waitFor(t, "the duplicate never counted", func() bool { return ignored("duplicate") == 1 })
	push(t2.Add(-10*time.Second), 3)
	waitFor(t, "the late point never counted", func() bool { return ignored("out_of_order") == 1 })
	if x := stored(); x.Value != 5 || !x.At.Equal(t2) {
		t.Errorf("after a duplicate and a late point: %+v, want 5 at %v", x, t2)
	}
}

// A replica that stops pushing is left out once its newest point is older
// than the max age, and named, while the one that goes on pushing stays.
func TestCollectorReplicaStopsPushing(t *testing.T) {
	p := startPipeline(t, authToken)
	ctx := context.Background()
	var pods []sdk
	for _, pod := range []string{"shop-1", "shop-2"} {
		s := p.sdk(t, podResource("team-a", "shop", pod), false)
		g, err := s.provider.Meter("m").Float64Gauge(exposition.Activations)
		if err != nil {
			t.Fatal(err)
		}
		g.Record(ctx, 1)
		if err := s.flush(t); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, s)
	}
	waitFor(t, "both pods never stored", func() bool { return len(p.read(exposition.Activations)) == 2 })

	// A few of the pipeline's 1 s batches, as the README advises: with
	// maxAge at one batch, a batch that lands late reads shop-1 as stopped
	// too.
	const maxAge = 3 * time.Second
	src := newSource(t, p.h, "team-a", "shop", time.Now, maxAge)
	var obs pressure.Observation
	// shop-1 exports every 20 ms (each a new point: a gauge is exported
	// with the time of its export); shop-2 has stopped.
	waitFor(t, "shop-2 never left out", func() bool {
		if err := pods[0].flush(t); err != nil {
			t.Fatal(err)
		}
		var err error
		obs, err = src.Observe(ctx)
		return err == nil && len(obs.Missing) == 1
	})
	if len(obs.Replicas) != 1 || obs.Replicas[0].Name != "shop-1" {
		t.Errorf("replicas = %+v, want shop-1 only", obs.Replicas)
	}
	m := obs.Missing[0]
	if m.Name != "shop-2" || m.Err == nil || !strings.Contains(m.Err.Error(), "maxAge 3s") {
		t.Errorf("missing = %+v, want shop-2 named for its max age", obs.Missing)
	}
}

// collectorFiles are the files the README's pipeline names, as this test
// writes them.
type collectorFiles struct{ token, ca, cert, key string }

// readmeCollectorConfig is the README's collector pipeline ("Through an
// OpenTelemetry Collector") as the test runs it. What it changes, and
// only that; everything else (the filter, the batch, the exporter's other
// settings) is the README's:
//   - the receivers: the README's pipeline receives from whatever the
//     cluster has and defines none; here an otlp receiver on addr, the
//     pipeline's only one.
//   - k8sattributes/barometer is left out: it reads pods from the
//     Kubernetes API, which this test has not. The SDK's resource
//     carries the attributes it would add (checked against its list).
//   - the token, CA and endpoint are this test's; with mTLS the
//     exporter has the client certificate and no auth, and the token
//     extension is not started, as the README's comment says.
//   - authTokenHTTP swaps the otlp exporter for otlphttp to the HTTP
//     listener, the rest of its settings kept.
//   - the collector's own telemetry is off (its :8888 listener).
func readmeCollectorConfig(t *testing.T, addr string, h *harness, auth string, f collectorFiles) ([]byte, error) {
	t.Helper()
	cfg, err := readmeCollectorBlock()
	if err != nil {
		return nil, err
	}
	// at is the mapping at path under m, which the README must have.
	var errs []error
	at := func(m map[any]any, path ...string) map[any]any {
		m, err := child(m, path...)
		errs = append(errs, err)
		return m
	}
	pipe := at(cfg, "service", "pipelines", "metrics/barometer")
	if got := fmt.Sprint(pipe["exporters"]); got != "[otlp/barometer]" {
		errs = append(errs, fmt.Errorf("the pipeline exports to %s, want [otlp/barometer]", got))
	}
	cfg["receivers"] = map[any]any{"otlp": map[any]any{"protocols": map[any]any{"grpc": map[any]any{"endpoint": addr}}}}
	pipe["receivers"] = []any{"otlp"}

	const k8s = "k8sattributes/barometer"
	extract := fmt.Sprint(at(cfg, "processors", k8s, "extract")["metadata"])
	if extract != "[k8s.namespace.name k8s.pod.name k8s.deployment.name]" {
		errs = append(errs, fmt.Errorf("README's %s extracts %s; podResource sends k8s.namespace.name, k8s.pod.name and k8s.deployment.name", k8s, extract))
	}
	delete(at(cfg, "processors"), k8s)
	procs, _ := pipe["processors"].([]any)
	pipe["processors"] = slices.DeleteFunc(procs, func(p any) bool { return p == k8s })

	at(cfg, "extensions", "bearertokenauth/barometer")["filename"] = f.token
	exp := at(cfg, "exporters", "otlp/barometer")
	exp["endpoint"] = h.recv.GRPCAddr().String()
	tlsCfg := at(exp, "tls")
	tlsCfg["ca_file"] = f.ca
	switch auth {
	case authMTLS:
		tlsCfg["cert_file"], tlsCfg["key_file"] = f.cert, f.key
		delete(exp, "auth")
		delete(at(cfg, "service"), "extensions")
		delete(cfg, "extensions")
	case authTokenHTTP:
		exp["endpoint"] = "https://" + h.recv.HTTPAddr().String()
		delete(at(cfg, "exporters"), "otlp/barometer")
		at(cfg, "exporters")["otlphttp/barometer"] = exp
		pipe["exporters"] = []any{"otlphttp/barometer"}
	}
	at(cfg, "service")["telemetry"] = map[any]any{"metrics": map[any]any{"level": "none"}}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("README's collector pipeline: %w", err)
	}
	return yaml.Marshal(cfg)
}

// readmeCollectorBlock is the YAML block after "Through an OpenTelemetry
// Collector." in the README.
func readmeCollectorBlock() (map[any]any, error) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		return nil, err
	}
	_, after, ok := strings.Cut(string(readme), "**Through an OpenTelemetry Collector.**")
	if !ok {
		return nil, errors.New(`README has no "Through an OpenTelemetry Collector." section`)
	}
	_, after, ok = strings.Cut(after, "```yaml\n")
	block, _, closed := strings.Cut(after, "```")
	if !ok || !closed {
		return nil, errors.New("README's collector section has no yaml block")
	}
	var cfg map[any]any
	if err := yaml.Unmarshal([]byte(block), &cfg); err != nil {
		return nil, fmt.Errorf("README's collector block: %w", err)
	}
	return cfg, nil
}

// child is the mapping at path under m.
func child(m map[any]any, path ...string) (map[any]any, error) {
	for i, key := range path {
		next, ok := m[key].(map[any]any)
		if !ok {
			return map[any]any{}, fmt.Errorf("no mapping at %s", strings.Join(path[:i+1], "."))
		}
		m = next
	}
	return m, nil
}

// The README's filter keeps every name of the contract (docs/exposition.md)
// and drops others. OTTL's IsMatch is Go's regexp, so the pattern is
// checked here against every name, not only those the pipeline test pushes.
func TestREADMECollectorFilterKeepsTheContract(t *testing.T) {
	cfg, err := readmeCollectorBlock()
	if err != nil {
		t.Fatal(err)
	}
	filter, err := child(cfg, "processors", "filter/barometer", "metrics")
	if err != nil {
		t.Fatal(err)
	}
	conditions, _ := filter["metric"].([]any)
	if len(conditions) != 1 {
		t.Fatalf("filter conditions = %v, want the one drop condition", filter["metric"])
	}
	m := regexp.MustCompile(`^not IsMatch\(name, "(.*)"\)$`).FindStringSubmatch(fmt.Sprint(conditions[0]))
	if m == nil {
		t.Fatalf("filter condition %q is not `not IsMatch(name, \"...\")`", conditions[0])
	}
	keep, err := regexp.Compile(strings.ReplaceAll(m[1], `\\`, `\`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range exposition.DefaultNames().All() {
		if !keep.MatchString(name) {
			t.Errorf("the README's filter drops %s, a metric of the contract", name)
		}
	}
	for _, name := range []string{"http_server_requests_total", "process_open_fds", "go_goroutines"} {
		if keep.MatchString(name) {
			t.Errorf("the README's filter keeps %s, outside the contract", name)
		}
	}
}
