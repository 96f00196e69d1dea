package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/wirescan/wirescantest"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // the gzipped cases
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpPushers is how many pushes each case sends at once, each with its
// own credential (a credential may hold 2 pushes at once).
const otlpPushers = 4

// otlpCase is one kind of push, sent by otlpPushers clients at once.
type otlpCase struct {
	name      string
	transport string // grpc or http
	token     bool   // authenticated
	gzip      bool
	body      []byte
}

// otlpRun is the -otlp mode: for each case a fresh scaler with its OTLP
// receiver on and GOMEMLIMIT as given, and its peak RSS (VmHWM, reset
// after a warm-up) while otlpPushers clients send that push at once,
// rounds times, measured from outside as a pusher sees the receiver.
func otlpRun(ctx context.Context, bin, dir string, r *report, memoryLimit string, rounds int) error {
	var creds strings.Builder
	creds.WriteString("credentials:\n")
	for i := range otlpPushers {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("t%d.token", i)), []byte(otlpToken(i)), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(&creds, "  - {name: tenant-%d, token_file: t%d.token, namespaces: [team-%d]}\n", i, i, i)
	}
	credsFile := filepath.Join(dir, "otlp-credentials.yaml")
	if err := os.WriteFile(credsFile, []byte(creds.String()), 0o600); err != nil {
		return err
	}
	if memoryLimit != "" {
		fmt.Println("scaler GOMEMLIMIT:", memoryLimit)
	}
	for _, c := range otlpCases() {
		if err := otlpCaseRun(ctx, bin, dir, r, credsFile, memoryLimit, rounds, c); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

func otlpCaseRun(ctx context.Context, bin, dir string, r *report, credsFile, memoryLimit string, rounds int, c otlpCase) error {
	g, err := freeAddr()
	if err != nil {
		return err
	}
	h, err := freeAddr()
	if err != nil {
		return err
	}
	env := []string{"BAROMETER_OTLP_GRPC_ADDR=" + g, "BAROMETER_OTLP_HTTP_ADDR=" + h, "BAROMETER_OTLP_CREDENTIALS=" + credsFile}
	if memoryLimit != "" {
		env = append(env, "GOMEMLIMIT="+memoryLimit)
	}
	p, err := startScaler(ctx, bin, "otlp", dir, env...)
	if err != nil {
		return err
	}
	defer p.kill()
	conn, err := grpc.NewClient(g, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(8<<20)))
	if err != nil {
		return err
	}
	defer conn.Close()
	pushers := &otlpPushersSet{grpc: conn, httpURL: "http://" + h + "/v1/metrics"}
	// One small push over each transport, then a second for the runtime
	// to settle: the baseline.
	for _, transport := range []string{"grpc", "http"} {
		pushers.push(ctx, otlpCase{transport: transport, token: true, body: contractPods(1)}, 0)
	}
	time.Sleep(time.Second)
	base := p.rss()
	if err := resetPeak(p); err != nil {
		return err
	}
	answers := &answerCounts{}
	for range rounds {
		var wg sync.WaitGroup
		for i := range otlpPushers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers.add(pushers.push(ctx, c, i))
			}()
		}
		wg.Wait()
	}
	peak := p.peakRSS()
	live := p.gauges(ctx, "go_gc_heap_live_bytes")["go_gc_heap_live_bytes"]
	r.add("otlp", fmt.Sprintf("%s: %s, %d at once x%d", c.transport, c.name, otlpPushers, rounds),
		fmt.Sprintf("RSS %s, peak %s, after %s (live heap %s); %s", mib(float64(base)), mib(float64(peak)), mib(float64(p.rss())), mib(live), answers))
	return nil
}

func otlpToken(i int) string { return fmt.Sprintf("bench-token-%d", i) }

// otlpCases are the pushes measured: the largest the receiver takes in
// (4 MiB less a KiB) of the shapes that decode into the most, without a
// credential and with one, and the largest pushes it stores.
func otlpCases() []otlpCase {
	const size = 4<<20 - 1024
	resources := repeatField(1, nil, size/2) // ExportMetricsServiceRequest.resource_metrics, empty
	attrs := repeatField(1, nil, size/2-8)   // one ResourceMetrics.resource of empty attributes
	oneResource := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
		protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), attrs))
	var cases []otlpCase
	for _, transport := range []string{"grpc", "http"} {
		cases = append(cases,
			otlpCase{name: "unauthenticated, 4 MiB of empty resources", transport: transport, body: resources},
			otlpCase{name: "4 MiB of empty resources", transport: transport, token: true, body: resources},
			otlpCase{name: "4 MiB of one resource's empty attributes", transport: transport, token: true, body: oneResource},
			otlpCase{name: "4 MiB of empty resources, gzipped", transport: transport, token: true, gzip: true, body: resources},
			otlpCase{name: "stored: 10,000 points, 833 pods", transport: transport, token: true, body: contractPods(833)},
			otlpCase{name: "stored: 3.9 MiB of resource attributes", transport: transport, token: true, body: bigAttributes(size - 200<<10)},
		)
	}
	return cases
}

func repeatField(num protowire.Number, value []byte, n int) []byte {
	var b []byte
	for range n {
		b = protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), value)
	}
	return b
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// podResource is a pod's resource as the collector's k8sattributes
// processor and the SDK give it: fifteen attributes. ns is "" to let the
// credential's namespace apply.
func podResource(pod string) *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("k8s.deployment.name", "shop"), str("k8s.pod.name", pod),
		str("k8s.pod.uid", "0b7c2a4e-1f2d-4c3b-9a8e-7f6d5c4b3a21"), str("k8s.node.name", "node-12.eu-west-1.compute.internal"),
		str("k8s.replicaset.name", "shop-7d9f8c6b5"), str("k8s.pod.start_time", "2026-01-01T00:00:00Z"), str("service.name", "shop"),
		str("service.instance.id", pod), str("service.version", "1.42.0"), str("telemetry.sdk.name", "opentelemetry"),
		str("telemetry.sdk.language", "go"), str("telemetry.sdk.version", "1.47.0"), str("host.name", pod),
		str("k8s.cluster.name", "prod-eu"), str("cloud.region", "eu-west-1")}}
}

// contractPods is a push of pods replicas of the contract, twelve points
// each (nine gauges, two counters, a ten-bucket histogram), timed now.
func contractPods(pods int) []byte {
	ts := uint64(time.Now().UnixNano())
	num := func(v float64) []*metricspb.NumberDataPoint {
		return []*metricspb.NumberDataPoint{{TimeUnixNano: ts, StartTimeUnixNano: ts - 3600e9, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}}
	}
	g := func(name string, v float64) *metricspb.Metric {
		return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: num(v)}}}
	}
	c := func(name string, v float64) *metricspb.Metric {
		return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true, AggregationTemporality: 2, DataPoints: num(v)}}}
	}
	req := &colmetrics.ExportMetricsServiceRequest{}
	for p := range pods {
		hist := &metricspb.Metric{Name: "barometer_queue_run_duration_seconds", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
			AggregationTemporality: 2, DataPoints: []*metricspb.HistogramDataPoint{{TimeUnixNano: ts, StartTimeUnixNano: ts - 3600e9, Count: 100, Sum: proto.Float64(12),
				ExplicitBounds: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5}, BucketCounts: []uint64{1, 2, 3, 4, 10, 20, 30, 20, 5, 5}}}}}}
		req.ResourceMetrics = append(req.ResourceMetrics, &metricspb.ResourceMetrics{
			Resource: podResource(fmt.Sprintf("shop-7d9f8c6b5-%05d", p)),
			ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{Name: "shop/pressure"}, Metrics: []*metricspb.Metric{
				g("barometer_activations", 40), g("process_resident_memory_bytes", 1<<28), g("barometer_memory_limit_bytes", 1<<29),
				g("barometer_cpu_limit_cores", 2), g("barometer_wal_saturation_state", 0), g("barometer_splits_in_flight", 0),
				g("barometer_wal_tree_retained_bytes", 1e6), g("barometer_queue_ready", 3), g("barometer_queue_busy", 5),
				c("process_cpu_seconds_total", 1234.5), c("barometer_queue_arrivals_total", 99), hist,
			}}},
		})
	}
	b, _ := proto.Marshal(req)
	return b
}

// bigAttributes is a push of about size bytes, most of them 16 KiB
// resource attribute values (read, not stored), and one gauge a pod.
func bigAttributes(size int) []byte {
	value := strings.Repeat("x", 16<<10)
	req := &colmetrics.ExportMetricsServiceRequest{}
	ts := uint64(time.Now().UnixNano())
	for p := 0; proto.Size(req) < size-20<<10; p++ {
		res := podResource(fmt.Sprintf("big-%05d", p))
		res.Attributes = append(res.Attributes, str("padding", value))
		req.ResourceMetrics = append(req.ResourceMetrics, &metricspb.ResourceMetrics{Resource: res,
			ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "barometer_activations", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
				DataPoints: []*metricspb.NumberDataPoint{{TimeUnixNano: ts, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: 1}}}}}}}}}})
	}
	b, _ := proto.Marshal(req)
	return b
}

// otlpPushersSet sends one case's push as pusher i.
type otlpPushersSet struct {
	grpc    *grpc.ClientConn
	httpURL string
}

// push sends c as pusher i and returns the answer: a gRPC code's name or
// an HTTP status.
func (s *otlpPushersSet) push(ctx context.Context, c otlpCase, i int) string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if c.transport == "grpc" {
		if c.token {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+otlpToken(i))
		}
		opts := []grpc.CallOption{grpc.ForceCodecV2(wirescantest.RawCodec{})}
		if c.gzip {
			opts = append(opts, grpc.UseCompressor("gzip"))
		}
		body, answer := c.body, []byte(nil)
		err := s.grpc.Invoke(ctx, colmetrics.MetricsService_Export_FullMethodName, &body, &answer, opts...)
		return status.Code(err).String()
	}
	body := c.body
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.httpURL, nil)
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(body)
		_ = w.Close()
		body = buf.Bytes()
		req.Header.Set("Content-Encoding", "gzip")
	}
	if c.token {
		req.Header.Set("Authorization", "Bearer "+otlpToken(i))
	}
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "error"
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return fmt.Sprint(resp.StatusCode)
}

// answerCounts counts the answers of a case's pushes.
type answerCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *answerCounts) add(answer string) {
	a.mu.Lock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[answer]++
	a.mu.Unlock()
}

func (a *answerCounts) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var parts []string
	for k, v := range a.n {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// resetPeak resets the process' peak RSS (VmHWM) to its RSS now.
func resetPeak(p *scalerProc) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.cmd.Process.Pid), []byte("5"), 0)
}
