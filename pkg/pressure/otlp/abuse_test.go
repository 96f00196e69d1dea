package otlp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// stalled is a request body that sends head, then nothing until the test
// ends: a client that stopped sending mid-body.
func stalled(t *testing.T, head []byte) io.Reader {
	t.Helper()
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write(head) }()
	t.Cleanup(func() { pw.Close() })
	return pr
}

// grpcFrame is a gRPC message's length-prefixed frame.
func grpcFrame(msg []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
}

// rawGRPC is a gRPC call made by hand over HTTP/2 without TLS, so that a
// test can send any body, at any pace; the answer's grpc-status is in its
// headers (a refusal before the message) or its trailers.
func rawGRPC(t *testing.T, h *harness, token string, body io.Reader) (codes.Code, error) {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	req, err := http.NewRequest(http.MethodPost, "http://"+h.recv.GRPCAddr().String()+colmetrics.MetricsService_Export_FullMethodName, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return codes.Unknown, err
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Grpc-Status"); s != "" {
		return grpcCode(s), nil
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return codes.Unknown, err
	}
	return grpcCode(resp.Trailer.Get("Grpc-Status")), nil
}

func grpcCode(s string) codes.Code {
	var c codes.Code
	if err := c.UnmarshalJSON([]byte(s)); err != nil {
		return codes.Unknown
	}
	return c
}

// A push is refused for its credential from its headers alone: the
// answer comes while its body has not arrived, over gRPC (the tap runs
// before the message is read) and over HTTP.
func TestRefusedBeforeTheBodyIsRead(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	// A frame announcing 4 MiB less a byte, of which 5 bytes come.
	head := grpcFrame(nil)
	binary.BigEndian.PutUint32(head[1:], 4<<20-1)
	for _, token := range []string{"", "not-a-token"} {
		code, err := rawGRPC(t, h, token, stalled(t, append(head, 1, 2, 3, 4, 5)))
		if err != nil || code != codes.Unauthenticated {
			t.Fatalf("gRPC with token %q and its body pending: %v %v, want Unauthenticated", token, code, err)
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+h.recv.HTTPAddr().String()+"/v1/metrics", stalled(t, []byte{1, 2, 3}))
		req.ContentLength = 4<<20 - 1
		req.Header.Set("Content-Type", "application/x-protobuf")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		wantStatus(t, resp, http.StatusUnauthorized)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_requests_refused_total", "reason", "unauthenticated"); got != 4 {
		t.Errorf("counted %v, want 4", got)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_requests_total", "transport", "grpc", "code", "Unauthenticated"); got != 2 {
		t.Errorf("gRPC requests counted %v, want 2", got)
	}
}

// slowPushes opens n pushes of token whose bodies never end, over both
// transports in turn, and waits until the receiver holds them, with held
// already: until it counts held+n open pushes.
func slowPushes(t *testing.T, h *harness, token string, n, held int) {
	t.Helper()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				req, _ := http.NewRequest(http.MethodPost, "http://"+h.recv.HTTPAddr().String()+"/v1/metrics", stalled(t, []byte{0x0a}))
				req.Header.Set("Content-Type", "application/x-protobuf")
				req.Header.Set("Authorization", "Bearer "+token)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			} else {
				head := grpcFrame(nil)
				binary.BigEndian.PutUint32(head[1:], 1000)
				_, _ = rawGRPC(t, h, token, stalled(t, head))
			}
		}()
	}
	waitMetric(t, h, float64(held+n), "barometer_otlp_requests_open")
}

// waitMetric waits until the registry's samples of name with the given
// labels add up to want.
func waitMetric(t *testing.T, h *harness, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := metricValue(t, h.reg, name, labels...)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v is %v, want %v", name, labels, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// refused pushes with c, expecting it refused with code, and returns the
// error.
func refused(t *testing.T, c rawClient, code codes.Code) error {
	t.Helper()
	_, err := c.export(activations("team-a", "shop-1", 1, 1))
	if status.Code(err) != code {
		t.Fatalf("push %v, want %s", err, code)
	}
	return err
}

// One credential holding every push it may with bodies that never end
// holds its own share only: its next push is told to retry, and the other
// tenant's pushes, over both transports, are stored and read fresh.
func TestSlowBodiesHoldOnlyTheirCredentialsShare(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	slowPushes(t, h, tokenA, receiver.DefaultMaxOpenRequestsPerCredential, 0)
	err := refused(t, newRawClient(t, h, tokenA), codes.ResourceExhausted)
	if st, _ := status.FromError(err); len(st.Details()) != 1 || !strings.Contains(st.Message(), "this credential") {
		t.Errorf("refused %v, want its credential's share named and a RetryInfo", err)
	}
	resp := post(t, h, tokenA, "application/x-protobuf", "", marshal(t, activations("team-a", "shop-1", 1, 1)))
	wantStatus(t, resp, http.StatusTooManyRequests)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}

	// team-b pushes with the SDK, over both transports, several times.
	for i, exp := range []sdkmetric.Exporter{grpcExporter(t, h, tokenB, false), httpExporter(t, h, tokenB)} {
		s := newSDK(t, exp, podResource("team-b", "shop", []string{"shop-grpc", "shop-http"}[i]))
		in := newInstruments(t, s.provider)
		for range 5 {
			in.recordContract(context.Background())
			if err := s.flush(t); err != nil {
				t.Fatalf("team-b's push beside team-a's held ones: %v", err)
			}
		}
	}
	src := newSource(t, h, "team-b", "shop", time.Now, time.Minute)
	obs, err := src.Observe(context.Background())
	if err != nil || len(obs.Replicas) != 2 {
		t.Fatalf("team-b reads %+v %v, want both pods", obs.Replicas, err)
	}
	if age := time.Since(obs.MeasuredAt); age < 0 || age > time.Minute {
		t.Errorf("team-b's data %s old, want its last push's", age)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_requests_refused_total", "reason", "credential_busy"); got < 2 {
		t.Errorf("credential_busy counted %v, want 2 at least", got)
	}
}

// When every open push is held, one more of any credential is told to
// retry: "busy", not the credential's share.
func TestEveryOpenPushHeld(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{MaxOpenRequests: 3}, "")
	slowPushes(t, h, tokenA, 2, 0)
	slowPushes(t, h, tokenB, 1, 2)
	err := refused(t, newRawClient(t, h, tokenB), codes.ResourceExhausted)
	if !strings.Contains(err.Error(), "too many pushes at once") {
		t.Errorf("refused %v, want the receiver busy", err)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_requests_refused_total", "reason", "busy"); got < 1 {
		t.Errorf("busy counted %v", got)
	}
}

// A body slower than the minimum rate is cut off and answered (408 over
// HTTP), counted, and its place given back.
func TestSlowBodyIsCut(t *testing.T) {
	// A body may take 100 ms, and a millisecond a KiB after that; gRPC's
	// deadline is the largest body's, 64 KiB.
	h := newHarness(t, store.Options{}, receiver.Config{BodyGrace: 100 * time.Millisecond, MinBodyBytesPerSecond: 1 << 20,
		MaxRequestBytes: 64 << 10, MaxOpenRequestsPerCredential: 1}, "")
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.recv.HTTPAddr().String()+"/v1/metrics", stalled(t, []byte{0x0a}))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Authorization", "Bearer "+tokenA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st spb.Status
	if resp.StatusCode != http.StatusRequestTimeout || proto.Unmarshal(body, &st) != nil || !strings.Contains(st.GetMessage(), "minimum rate") {
		t.Fatalf("HTTP %d %v, want 408 with a status naming the minimum rate", resp.StatusCode, &st)
	}
	head := grpcFrame(nil)
	binary.BigEndian.PutUint32(head[1:], 1000)
	if code, err := rawGRPC(t, h, tokenA, stalled(t, head)); code == codes.OK && err == nil {
		t.Fatal("a gRPC body that never ends was answered OK")
	}
	// The client may hear of the cut before the handler counts it and
	// gives back its place.
	for _, transport := range []string{"http", "grpc"} {
		waitMetric(t, h, 1, "barometer_otlp_requests_refused_total", "transport", transport, "reason", "slow_body")
	}
	waitMetric(t, h, 0, "barometer_otlp_requests_open")
	// The one place team-a may hold is free again.
	if _, err := newRawClient(t, h, tokenA).export(activations("team-a", "shop-1", 1, 1)); err != nil {
		t.Fatalf("after the slow bodies were cut: %v", err)
	}
}

// Bodies built to decode into far more than their size are refused from
// their wire form, before they are decoded, with what they hold named:
// a push costs what the caps allow, whatever it is made of.
func TestHostileBodiesRefusedBeforeTheDecode(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	const size = 4<<20 - 64
	repeat := func(num protowire.Number, value []byte, n int) []byte {
		var b []byte
		for range n {
			b = protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), value)
		}
		return b
	}
	// One resource of empty attributes: under the counts, over the
	// decoded bytes.
	attrs := repeat(1, nil, size/2-8)
	oneResource := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
		protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), attrs))
	for _, tc := range []struct {
		name, ctype, reason string
		body                []byte
	}{
		{"empty resources", "application/x-protobuf", "too_many_resources", repeat(1, nil, size/2)},
		{"empty attributes", "application/x-protobuf", "decoded_too_large", oneResource},
		{"empty JSON resources", "application/json", "decoded_too_large", []byte(`{"resourceMetrics":[` + strings.Repeat(`{},`, size/3-20) + `{}]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, h, tokenA, tc.ctype, "", tc.body)
			wantStatus(t, resp, http.StatusRequestEntityTooLarge)
			if tc.ctype == "application/x-protobuf" {
				code, err := rawGRPC(t, h, tokenA, bytes.NewReader(grpcFrame(tc.body)))
				if err != nil || code != codes.ResourceExhausted {
					t.Fatalf("gRPC: %v %v, want ResourceExhausted", code, err)
				}
			}
			if got := metricValue(t, h.reg, "barometer_otlp_requests_refused_total", "reason", tc.reason); got == 0 {
				t.Errorf("%s not counted", tc.reason)
			}
		})
	}
	// A real push of many pods, under every cap, is stored.
	var rms []*metricspb.ResourceMetrics
	for i := range 500 {
		rms = append(rms, activations("team-a", "shop-"+itoa(int64(i)), 1, 1))
	}
	if resp, err := newRawClient(t, h, tokenA).export(rms...); err != nil || resp.GetPartialSuccess() != nil {
		t.Fatalf("500 pods: %v %v", resp, err)
	}
}

// A GET is not a push: 405 with a google.rpc.Status, as OTLP/HTTP asks
// of every error.
func TestGetIsNotAPush(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	resp, err := http.Get("http://" + h.recv.HTTPAddr().String() + "/v1/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var st spb.Status
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost ||
		resp.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &st) != nil || st.GetMessage() == "" {
		t.Fatalf("GET: %d %v %q, want 405, Allow: POST and a google.rpc.Status", resp.StatusCode, resp.Header, body)
	}
}

// One tenant at its memory share leaves the others theirs: a namespace
// stops at its cap, and another namespace's new series are stored.
func TestTenantAtItsMemoryShare(t *testing.T) {
	h := newHarness(t, store.Options{MaxMemoryBytes: 256 << 10}, receiver.Config{}, "")
	a := newRawClient(t, h, tokenA)
	for pod := 0; ; pod++ {
		var points []*metricspb.NumberDataPoint
		for i := range 100 {
			points = append(points, numberPoint(at(1), time.Time{}, 1, "i", itoa(int64(i))))
		}
		resp, err := a.export(rm("team-a", "shop", "shop-"+itoa(int64(pod)), gauge(exposition.Activations, points...)))
		if err != nil {
			t.Fatal(err)
		}
		if ps := resp.GetPartialSuccess(); ps.GetRejectedDataPoints() > 0 {
			if !strings.Contains(ps.GetErrorMessage(), "namespace's memory cap") {
				t.Fatalf("team-a stopped by %q, want its own share", ps.GetErrorMessage())
			}
			break
		}
		if pod > 1000 {
			t.Fatal("team-a never reached its share")
		}
	}
	resp, err := newRawClient(t, h, tokenB).export(activations("team-b", "shop-1", 1, 7), activations("team-b", "shop-2", 1, 7))
	if err != nil || resp.GetPartialSuccess() != nil {
		t.Fatalf("team-b's new series beside team-a at its share: %v %v", resp, err)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_points_rejected_total", "reason", "namespace_memory_cap"); got == 0 {
		t.Error("team-a's refused points not counted")
	}
}
