package wirescan_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/wirescan"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/wirescan/wirescantest"
)

// allocated is the bytes f allocates: the least of three runs after a
// first (the first decode of a message type also builds the decoder's
// tables, once for the process; the least leaves out what another
// goroutine allocated meanwhile).
func allocated(f func()) int64 {
	f()
	least := int64(-1)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		if n := int64(after.TotalAlloc - before.TotalAlloc); least < 0 || n < least {
			least = n
		}
	}
	return least
}

// The scan's estimate is never below what the decode allocates, for real
// pushes and for bodies built to decode into the most, in protobuf and in
// JSON, and it stays near it for real pushes.
func TestScanEstimateBoundsTheDecode(t *testing.T) {
	bodies := map[string][]byte{}
	for _, pods := range []int{1, 100, 683} {
		b, _ := proto.Marshal(wirescantest.CollectorPush(pods))
		bodies[fmt.Sprintf("%d pods", pods)] = b
	}
	for name, b := range wirescantest.HostileBodies(32 << 10) {
		bodies[name] = b
	}
	for name, body := range bodies {
		tl, err := wirescan.Proto(body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var req *colmetrics.ExportMetricsServiceRequest
		got := allocated(func() {
			req = &colmetrics.ExportMetricsServiceRequest{}
			err = proto.UnmarshalOptions{RecursionLimit: wirescan.MaxDepth + 1}.Unmarshal(body, req)
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tl.Decoded < got {
			t.Errorf("%s (protobuf, %d bytes): estimated %d, the decode allocated %d", name, len(body), tl.Decoded, got)
		}
		t.Logf("%-24s protobuf %8d bytes: decode allocates %9d, estimated %9d (%.2fx); %d resources, %d points",
			name, len(body), got, tl.Decoded, float64(tl.Decoded)/float64(got), tl.Resources, tl.Points)
		if strings.Contains(name, "pods") {
			if float64(tl.Decoded) > 1.6*float64(got) {
				t.Errorf("%s: estimated %d, more than 1.6 times the %d allocated", name, tl.Decoded, got)
			}
		}
		if name == "100 pods" {
			js, _ := protojson.Marshal(req)
			est, err := wirescan.JSON(js)
			if err != nil {
				t.Fatal(err)
			}
			got := allocated(func() {
				err = protojson.UnmarshalOptions{DiscardUnknown: true, RecursionLimit: 2*wirescan.MaxDepth + 2}.Unmarshal(js, &colmetrics.ExportMetricsServiceRequest{})
			})
			if err != nil {
				t.Fatal(err)
			}
			if est < got {
				t.Errorf("%s (JSON, %d bytes): estimated %d, the decode allocated %d", name, len(js), est, got)
			}
			t.Logf("%-24s JSON     %8d bytes: decode allocates %9d, estimated %9d (%.2fx)", name, len(js), got, est, float64(est)/float64(got))
		}
	}
	for name, js := range map[string]string{
		"empty resources": `{"resourceMetrics":[` + strings.Repeat(`{},`, 10_000) + `{}]}`,
		"empty points":    `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"gauge":{"dataPoints":[` + strings.Repeat(`{},`, 10_000) + `{}]}}]}]}]}`,
		"bucket counts":   `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"histogram":{"dataPoints":[{"bucketCounts":[` + strings.Repeat(`1,`, 15_000) + `1]}]}}]}]}]}`,
		"escaped strings": `{"resourceMetrics":[{"resource":{"attributes":[` + strings.Repeat(`{"key":"\u0041\u0041\u0041\u0041"},`, 3_000) + `{}]}}]}`,
	} {
		est, err := wirescan.JSON([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		got := allocated(func() {
			err = protojson.UnmarshalOptions{DiscardUnknown: true, RecursionLimit: 2*wirescan.MaxDepth + 2}.Unmarshal([]byte(js), &colmetrics.ExportMetricsServiceRequest{})
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if est < got {
			t.Errorf("%s (JSON, %d bytes): estimated %d, the decode allocated %d", name, len(js), est, got)
		}
		t.Logf("%-24s JSON     %8d bytes: decode allocates %9d, estimated %9d (%.2fx)", name, len(js), got, est, float64(est)/float64(got))
	}
}

// BenchmarkScan is the scan of a collector's push of 100 pods and of a
// full default batch (683 pods, 8,196 points), beside the decode it
// guards: what refusing a push before decoding it costs a push that is
// then decoded.
//
//	go test -run '^$' -bench Scan -benchmem ./pkg/pressure/otlp/wirescan/
func BenchmarkScan(b *testing.B) {
	for _, pods := range []int{100, 683} {
		body, _ := proto.Marshal(wirescantest.CollectorPush(pods))
		for name, f := range map[string]func() error{
			"scan": func() error { _, err := wirescan.Proto(body); return err },
			"decode": func() error {
				return proto.UnmarshalOptions{RecursionLimit: wirescan.MaxDepth + 1}.Unmarshal(body, &colmetrics.ExportMetricsServiceRequest{})
			},
		} {
			b.Run(fmt.Sprintf("%s/%dpods", name, pods), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if err := f(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
