package otlp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

func activations(ns, pod string, sec, v float64) *metricspb.ResourceMetrics {
	return rm(ns, "shop", pod, gauge(exposition.Activations, numberPoint(at(sec), time.Time{}, v)))
}

func marshal(t *testing.T, rms ...*metricspb.ResourceMetrics) []byte {
	t.Helper()
	b, err := proto.Marshal(&colmetrics.ExportMetricsServiceRequest{ResourceMetrics: rms})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("err %v, want %s", err, code)
	}
}

func wantStatus(t *testing.T, resp *http.Response, code int) {
	t.Helper()
	if resp.StatusCode != code {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("HTTP %d %q, want %d", resp.StatusCode, body, code)
	}
}

func stored(h *harness, ns string) []store.Replica {
	return h.store.Read(store.Query{Namespace: ns, Selector: map[string]string{"k8s.deployment.name": "shop"},
		Metrics: map[string]bool{exposition.Activations: true}, Window: time.Minute})
}

// A push without a credential, or with one the receiver does not know, is
// refused before it is read, on both transports and through the SDK.
func TestUnauthenticatedPushIsRefused(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	for _, token := range []string{"", "not-a-token", tokenA + "x"} {
		_, err := newRawClient(t, h, token).export(activations("team-a", "shop-1", 1, 1))
		wantCode(t, err, codes.Unauthenticated)
		wantStatus(t, post(t, h, token, "application/x-protobuf", "", marshal(t, activations("team-a", "shop-1", 1, 1))), http.StatusUnauthorized)
	}
	s := newSDK(t, grpcExporter(t, h, "", false), podResource("team-a", "shop", "shop-1"))
	g, _ := s.provider.Meter("m").Float64Gauge(exposition.Activations)
	g.Record(context.Background(), 1)
	if err := s.flush(t); status.Code(err) != codes.Unauthenticated && !strings.Contains(err.Error(), "Unauthenticated") {
		t.Fatalf("SDK push without a token: %v, want Unauthenticated", err)
	}
	if len(stored(h, "team-a")) != 0 {
		t.Fatal("an unauthenticated push was stored")
	}
	if got := metricValue(t, h.reg, "barometer_otlp_requests_refused_total", "reason", "unauthenticated"); got != 7 {
		t.Errorf("refusals counted %v, want 7", got)
	}
}

// k8s.namespace.name is checked against the credential, never trusted: a
// push for a namespace it does not list is refused (whole, or the
// resources at fault as a partial success), and nothing pushed for one
// namespace is read from another.
func TestNamespaceTheCredentialDoesNotAllow(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	a := newRawClient(t, h, tokenA)
	_, err := a.export(activations("team-b", "shop-1", 1, 5))
	wantCode(t, err, codes.PermissionDenied)
	wantStatus(t, post(t, h, tokenA, "application/x-protobuf", "", marshal(t, activations("team-b", "shop-1", 1, 5))), http.StatusForbidden)

	resp, err := a.export(activations("team-a", "shop-1", 1, 7), activations("team-b", "shop-9", 1, 5))
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.GetPartialSuccess()
	if ps.GetRejectedDataPoints() != 1 || !strings.Contains(ps.GetErrorMessage(), "k8s.namespace.name") {
		t.Fatalf("partial success %v, want 1 point rejected for its namespace", ps)
	}
	// No namespace attribute: the credential's only namespace.
	if _, err := a.export(activations("", "shop-2", 1, 3)); err != nil {
		t.Fatal(err)
	}
	// team-b pushes the same workload and pod names into its own namespace.
	if _, err := newRawClient(t, h, tokenB).export(activations("team-b", "shop-1", 1, 1000)); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return at(2) }
	obsA, err := newSource(t, h, "team-a", "shop", now, time.Minute).Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(obsA.Replicas) != 2 || obsA.Replicas[0].WorkingSet != 7 || obsA.Replicas[1].Name != "shop-2" {
		t.Fatalf("team-a reads %+v, want shop-1 at 7 and shop-2", obsA.Replicas)
	}
	obsB, err := newSource(t, h, "team-b", "shop", now, time.Minute).Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(obsB.Replicas) != 1 || obsB.Replicas[0].WorkingSet != 1000 {
		t.Fatalf("team-b reads %+v, want only its own shop-1", obsB.Replicas)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_requests_refused_total", "reason", "forbidden"); got != 2 {
		t.Errorf("forbidden pushes counted %v, want 2", got)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_points_rejected_total", "reason", "namespace"); got != 3 {
		t.Errorf("forbidden points counted %v, want 3", got)
	}
}

// Each cap refuses what crosses it, answers as OTLP asks, and counts it.
func TestCaps(t *testing.T) {
	t.Run("points per request", func(t *testing.T) {
		h := newHarness(t, store.Options{MaxPointsPerRequest: 2}, receiver.Config{}, "")
		three := rm("team-a", "shop", "shop-1", gauge(exposition.Activations,
			numberPoint(at(1), time.Time{}, 1, "a", "1"), numberPoint(at(1), time.Time{}, 1, "a", "2"), numberPoint(at(1), time.Time{}, 1, "a", "3")))
		_, err := newRawClient(t, h, tokenA).export(three)
		wantCode(t, err, codes.ResourceExhausted)
		wantStatus(t, post(t, h, tokenA, "application/x-protobuf", "", marshal(t, three)), http.StatusRequestEntityTooLarge)
		if got := metricValue(t, h.reg, "barometer_otlp_requests_refused_total", "reason", "too_many_points"); got != 2 {
			t.Errorf("counted %v, want 2", got)
		}
	})
	t.Run("request size", func(t *testing.T) {
		h := newHarness(t, store.Options{}, receiver.Config{MaxRequestBytes: 4096}, "")
		big := rm("team-a", "shop", "shop-1", gauge(exposition.Activations, numberPoint(at(1), time.Time{}, 1, "pad", strings.Repeat("x", 5000))))
		_, err := newRawClient(t, h, tokenA).export(big)
		wantCode(t, err, codes.ResourceExhausted)
		body := marshal(t, big)
		wantStatus(t, post(t, h, tokenA, "application/x-protobuf", "", body), http.StatusRequestEntityTooLarge)
		// Small on the wire, over the cap once decompressed.
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		_, _ = w.Write(body)
		_ = w.Close()
		if gz.Len() >= 4096 {
			t.Fatalf("compressed body %d bytes, want under the cap", gz.Len())
		}
		wantStatus(t, post(t, h, tokenA, "application/x-protobuf", "gzip", gz.Bytes()), http.StatusRequestEntityTooLarge)
		if got := metricValue(t, h.reg, "barometer_otlp_requests_refused_total", "reason", "too_large"); got != 3 {
			t.Errorf("counted %v, want 3", got)
		}
	})
	partial := func(t *testing.T, opts store.Options, want int64, reason, text string) {
		t.Helper()
		h := newHarness(t, opts, receiver.Config{}, "")
		var points []*metricspb.NumberDataPoint
		for _, shard := range []string{"1", "2", "3", "4"} {
			points = append(points, numberPoint(at(1), time.Time{}, 1, "shard", shard))
		}
		resp, err := newRawClient(t, h, tokenA).export(rm("team-a", "shop", "shop-1", gauge(exposition.Activations, points...)))
		if err != nil {
			t.Fatal(err)
		}
		ps := resp.GetPartialSuccess()
		if ps.GetRejectedDataPoints() != want || !strings.Contains(ps.GetErrorMessage(), text) {
			t.Fatalf("partial success %v, want %d rejected: %s", ps, want, text)
		}
		if got := metricValue(t, h.reg, "barometer_otlp_points_rejected_total", "reason", reason); got != float64(want) {
			t.Errorf("counted %v, want %d", got, want)
		}
		// The series kept go on being written.
		resp, err = newRawClient(t, h, tokenA).export(rm("team-a", "shop", "shop-1", gauge(exposition.Activations, numberPoint(at(2), time.Time{}, 9, "shard", "1"))))
		if err != nil || resp.GetPartialSuccess() != nil {
			t.Fatalf("an existing series: %v %v", resp, err)
		}
	}
	t.Run("series", func(t *testing.T) {
		partial(t, store.Options{MaxSeries: 3}, 1, "series_cap", "series cap")
	})
	t.Run("series per namespace", func(t *testing.T) {
		partial(t, store.Options{MaxSeriesPerNamespace: 2}, 2, "namespace_series_cap", "namespace's series cap")
	})
	t.Run("memory", func(t *testing.T) {
		// A replica and one gauge series fit; a second series does not.
		partial(t, store.Options{MaxMemoryBytes: 1300, MaxMemoryBytesPerNamespace: 1400}, 3, "memory_cap", "store's memory cap")
	})
	t.Run("memory per namespace", func(t *testing.T) {
		partial(t, store.Options{MaxMemoryBytesPerNamespace: 1300}, 3, "namespace_memory_cap", "namespace's memory cap")
	})
}

// OTLP/JSON is protojson of the same types: int64 as strings, enums as
// numbers, unknown fields ignored, and exemplar ids in hex.
func TestHTTPJSON(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	body := `{"resourceMetrics":[{"resource":{"attributes":[
	  {"key":"k8s.namespace.name","value":{"stringValue":"team-a"}},
	  {"key":"k8s.deployment.name","value":{"stringValue":"shop"}},
	  {"key":"k8s.pod.name","value":{"stringValue":"shop-1"}}]},
	 "scopeMetrics":[{"scope":{"name":"s"},"metrics":[
	  {"name":"barometer_activations","unit":"1","someFutureField":true,
	   "gauge":{"dataPoints":[{"timeUnixNano":"` + itoa(at(1).UnixNano()) + `","asInt":"1234",
	     "exemplars":[{"timeUnixNano":"` + itoa(at(1).UnixNano()) + `","asDouble":1,
	       "traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174"}]}]}},
	  {"name":"barometer_queue_arrivals_total","sum":{"aggregationTemporality":2,"isMonotonic":true,
	   "dataPoints":[{"timeUnixNano":"` + itoa(at(1).UnixNano()) + `","asDouble":3}]}}]}]}]}`
	resp := post(t, h, tokenA, "application/json", "", []byte(body))
	wantStatus(t, resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("response Content-Type %q, want JSON back", ct)
	}
	obs, err := newSource(t, h, "team-a", "shop", func() time.Time { return at(2) }, time.Minute).Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if obs.Replicas[0].WorkingSet != 1234 || obs.Queue == nil || obs.Queue.Arrivals != 3 {
		t.Fatalf("read %+v queue %+v", obs.Replicas, obs.Queue)
	}
	wantStatus(t, post(t, h, tokenA, "application/json", "", []byte(`{"resourceMetrics":[`)), http.StatusBadRequest)
	wantStatus(t, post(t, h, tokenA, "text/plain", "", []byte(body)), http.StatusUnsupportedMediaType)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A rotated token file is read on the next push; one that grows past the
// cap, or goes empty, keeps the last good token, and is counted.
func TestTokenFileRotation(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	path := filepath.Join(h.dir, "a.token")
	writeFile(t, path, "rotated-token")
	_, err := newRawClient(t, h, tokenA).export(activations("team-a", "shop-1", 1, 1))
	wantCode(t, err, codes.Unauthenticated)
	if _, err := newRawClient(t, h, "rotated-token").export(activations("team-a", "shop-1", 2, 1)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, strings.Repeat("x", receiver.MaxTokenFileBytes+1))
	if _, err := newRawClient(t, h, "rotated-token").export(activations("team-a", "shop-1", 3, 1)); err != nil {
		t.Fatalf("an oversized token file must keep the last good token: %v", err)
	}
	writeFile(t, path, "")
	if _, err := newRawClient(t, h, "rotated-token").export(activations("team-a", "shop-1", 4, 1)); err != nil {
		t.Fatalf("an empty token file must keep the last good token: %v", err)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_credential_file_errors_total"); got != 2 {
		t.Errorf("file errors counted %v, want 2", got)
	}
}
