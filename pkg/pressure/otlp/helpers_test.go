package otlp_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// The tokens of the test credentials: teamA may write team-a, both may
// write team-b's namespace only through their own credential.
const (
	tokenA = "token-of-team-a"
	tokenB = "token-of-team-b"
)

type harness struct {
	reg   *prometheus.Registry
	store *store.Store
	recv  *receiver.Receiver
	dir   string
}

// newHarness starts a receiver on loopback with two token credentials
// (team-a and team-b, one namespace each) plus extra credential entries.
func newHarness(t testing.TB, opts store.Options, cfg receiver.Config, extra string) *harness {
	t.Helper()
	h := &harness{reg: prometheus.NewRegistry(), dir: t.TempDir()}
	writeFile(t, filepath.Join(h.dir, "a.token"), tokenA+"\n")
	writeFile(t, filepath.Join(h.dir, "b.token"), tokenB)
	creds := `credentials:
  - name: team-a
    token_file: a.token
    namespaces: [team-a]
  - name: team-b
    token_file: b.token
    namespaces: [team-b]
` + extra
	path := filepath.Join(h.dir, "credentials.yaml")
	writeFile(t, path, creds)
	c, err := receiver.LoadCredentials(path, h.reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.store, err = store.New(opts, h.reg); err != nil {
		t.Fatal(err)
	}
	if cfg.GRPCAddress == "" {
		cfg.GRPCAddress = "127.0.0.1:0"
	}
	if cfg.HTTPAddress == "" {
		cfg.HTTPAddress = "127.0.0.1:0"
	}
	if h.recv, err = receiver.New(cfg, h.store, c, h.reg, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := h.recv.Run(ctx); err != nil {
			t.Errorf("receiver: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return h
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// podResource is a pod's resource as the OTel SDK sends it.
func podResource(ns, deployment, pod string) *resource.Resource {
	return resource.NewSchemaless(
		attribute.String("k8s.namespace.name", ns),
		attribute.String("k8s.deployment.name", deployment),
		attribute.String("k8s.pod.name", pod),
	)
}

// sdk is an OTel SDK meter provider whose reader exports only when
// flushed: its interval is an hour.
type sdk struct {
	provider *sdkmetric.MeterProvider
}

func (s sdk) flush(t *testing.T) error {
	t.Helper()
	return s.provider.ForceFlush(context.Background())
}

func newSDK(t *testing.T, exp sdkmetric.Exporter, res *resource.Resource) sdk {
	t.Helper()
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))),
	)
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return sdk{provider: mp}
}

// grpcExporter exports to h's gRPC listener with token.
func grpcExporter(t *testing.T, h *harness, token string, delta bool, extra ...otlpmetricgrpc.Option) sdkmetric.Exporter {
	t.Helper()
	return grpcExporterTo(t, h.recv.GRPCAddr().String(), token, delta, extra...)
}

// grpcExporterTo exports to endpoint over gRPC without TLS, once, without
// retries; with token when it is not empty, with delta temporality when
// delta.
func grpcExporterTo(t *testing.T, endpoint, token string, delta bool, extra ...otlpmetricgrpc.Option) sdkmetric.Exporter {
	t.Helper()
	opts := []otlpmetricgrpc.Option{
		otlpmetricgrpc.WithEndpoint(endpoint),
		otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false}),
	}
	if token != "" {
		opts = append(opts, otlpmetricgrpc.WithHeaders(map[string]string{"authorization": "Bearer " + token}))
	}
	if delta {
		opts = append(opts, otlpmetricgrpc.WithTemporalitySelector(deltaTemporality))
	}
	exp, err := otlpmetricgrpc.New(context.Background(), append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func httpExporter(t *testing.T, h *harness, token string) sdkmetric.Exporter {
	t.Helper()
	opts := []otlpmetrichttp.Option{
		otlpmetrichttp.WithEndpoint(h.recv.HTTPAddr().String()),
		otlpmetrichttp.WithInsecure(),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}),
	}
	if token != "" {
		opts = append(opts, otlpmetrichttp.WithHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	exp, err := otlpmetrichttp.New(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

func deltaTemporality(sdkmetric.InstrumentKind) metricdata.Temporality {
	return metricdata.DeltaTemporality
}

// rawClient is the OTLP gRPC client of the proto types, for points whose
// timestamps a test chooses (out of order, duplicates, resets).
type rawClient struct {
	client colmetrics.MetricsServiceClient
	token  string
}

func newRawClient(t *testing.T, h *harness, token string) rawClient {
	t.Helper()
	conn, err := grpc.NewClient(h.recv.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return rawClient{client: colmetrics.NewMetricsServiceClient(conn), token: token}
}

func (c rawClient) export(rms ...*metricspb.ResourceMetrics) (*colmetrics.ExportMetricsServiceResponse, error) {
	ctx := context.Background()
	if c.token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
	}
	return c.client.Export(ctx, &colmetrics.ExportMetricsServiceRequest{ResourceMetrics: rms})
}

func strAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// rm is one resource's metrics, for pod of deployment in ns.
func rm(ns, deployment, pod string, metrics ...*metricspb.Metric) *metricspb.ResourceMetrics {
	var attrs []*commonpb.KeyValue
	if ns != "" {
		attrs = append(attrs, strAttr("k8s.namespace.name", ns))
	}
	attrs = append(attrs, strAttr("k8s.deployment.name", deployment))
	if pod != "" {
		attrs = append(attrs, strAttr("k8s.pod.name", pod))
	}
	return &metricspb.ResourceMetrics{
		Resource:     &resourcepb.Resource{Attributes: attrs},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: metrics}},
	}
}

// numberPoint is a point at t (and start, 0 for none), with attributes as
// name, value pairs.
func numberPoint(t, start time.Time, v float64, attrs ...string) *metricspb.NumberDataPoint {
	p := &metricspb.NumberDataPoint{TimeUnixNano: nanos(t), StartTimeUnixNano: nanos(start), Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}
	for i := 0; i+1 < len(attrs); i += 2 {
		p.Attributes = append(p.Attributes, strAttr(attrs[i], attrs[i+1]))
	}
	return p
}

func nanos(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func gauge(name string, points ...*metricspb.NumberDataPoint) *metricspb.Metric {
	return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: points}}}
}

func counter(name string, points ...*metricspb.NumberDataPoint) *metricspb.Metric {
	return &metricspb.Metric{Name: name, Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
		IsMonotonic: true, AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, DataPoints: points}}}
}

// source reads deployment's pushes in ns with the clock now.
func newSource(t *testing.T, h *harness, ns, deployment string, now func() time.Time, maxAge time.Duration) *otlp.Source {
	t.Helper()
	s, err := otlp.New(h.store, otlp.Config{
		Namespace: ns,
		Selector:  map[string]string{"k8s.deployment.name": deployment},
		Window:    30 * time.Second,
		MaxAge:    maxAge,
		Names:     exposition.DefaultNames(),
		Now:       now,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// metricValue sums the registry's samples of name whose labels include
// the given name, value pairs.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// post sends body to the HTTP receiver.
func post(t *testing.T, h *harness, token, ctype, encoding string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+h.recv.HTTPAddr().String()+"/v1/metrics", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
