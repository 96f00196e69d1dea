package otlp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/wirescan/wirescantest"
)

// fuzzSeeds are pushes a fuzzer starts from: a contract push, with a
// histogram and a counter, and bodies built to decode into much more than
// their size.
func fuzzSeeds() [][]byte {
	push := &colmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{
		rm("team-a", "shop", "shop-1", gauge(exposition.Activations, numberPoint(at(1), time.Time{}, 4)),
			counter(exposition.CPUSeconds, numberPoint(at(1), at(0), 3)),
			&metricspb.Metric{Name: exposition.QueueRunDuration, Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
				DataPoints: []*metricspb.HistogramDataPoint{{TimeUnixNano: nanos(at(1)), Count: 2, Sum: proto.Float64(1.5),
					BucketCounts: []uint64{1, 1}, ExplicitBounds: []float64{1}}}}}}),
	}}
	pb, _ := proto.Marshal(push)
	var resources []byte
	for range 1000 {
		resources = protowire.AppendBytes(protowire.AppendTag(resources, 1, protowire.BytesType), nil)
	}
	return [][]byte{pb, resources}
}

// FuzzHTTPPush posts arbitrary bodies, as protobuf or JSON, plain or
// gzipped, to a real receiver's HTTP listener: every answer is one OTLP
// allows (200 with an ExportMetricsServiceResponse, or a client error with
// a google.rpc.Status, in the request's encoding), never a server error.
func FuzzHTTPPush(f *testing.F) {
	h := newHarness(f, store.Options{MaxSeries: 200}, receiver.Config{MaxRequestBytes: 256 << 10}, "")
	client := &http.Client{Timeout: time.Minute}
	for _, b := range fuzzSeeds() {
		f.Add(b, false, false)
		f.Add(b, false, true)
	}
	js, _ := protojson.Marshal(&colmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{activations("team-a", "shop-1", 1, 2)}})
	f.Add(js, true, false)
	f.Fuzz(func(t *testing.T, body []byte, json, gzipped bool) {
		ctype := "application/x-protobuf"
		if json {
			ctype = "application/json"
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+h.recv.HTTPAddr().String()+"/v1/metrics", nil)
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Authorization", "Bearer "+tokenA)
		if gzipped {
			var buf bytes.Buffer
			w := gzip.NewWriter(&buf)
			_, _ = w.Write(body)
			_ = w.Close()
			body = buf.Bytes()
			req.Header.Set("Content-Encoding", "gzip")
		}
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var msg proto.Message = &spb.Status{}
		switch resp.StatusCode {
		case http.StatusOK:
			msg = &colmetrics.ExportMetricsServiceResponse{}
		case http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("HTTP %d %q (json %v gzip %v body %q)", resp.StatusCode, answer, json, gzipped, body)
		}
		if resp.Header.Get("Content-Type") != ctype {
			t.Fatalf("answered in %q to %q", resp.Header.Get("Content-Type"), ctype)
		}
		if json {
			err = protojson.Unmarshal(answer, msg)
		} else {
			err = proto.Unmarshal(answer, msg)
		}
		if err != nil {
			t.Fatalf("HTTP %d: the answer %q is not a %T: %v", resp.StatusCode, answer, msg, err)
		}
	})
}

// FuzzGRPCPush sends arbitrary messages, plain or gzipped, to a real
// receiver's gRPC listener: every answer is an ExportMetricsServiceResponse
// or one of the refusals OTLP's gRPC codes allow, never a server error.
func FuzzGRPCPush(f *testing.F) {
	h := newHarness(f, store.Options{MaxSeries: 200}, receiver.Config{MaxRequestBytes: 256 << 10}, "")
	conn, err := grpc.NewClient(h.recv.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close() })
	for _, b := range fuzzSeeds() {
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Fuzz(func(t *testing.T, body []byte, gzipped bool) {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tokenA), time.Minute)
		defer cancel()
		opts := []grpc.CallOption{grpc.ForceCodecV2(wirescantest.RawCodec{})}
		if gzipped {
			opts = append(opts, grpc.UseCompressor("gzip"))
		}
		var answer []byte
		err := conn.Invoke(ctx, colmetrics.MetricsService_Export_FullMethodName, &body, &answer, opts...)
		switch status.Code(err) {
		case codes.OK:
			if err := proto.Unmarshal(answer, &colmetrics.ExportMetricsServiceResponse{}); err != nil {
				t.Fatalf("the answer %q: %v", answer, err)
			}
		case codes.InvalidArgument, codes.ResourceExhausted, codes.PermissionDenied:
		default:
			t.Fatalf("refused %v", err)
		}
	})
}
