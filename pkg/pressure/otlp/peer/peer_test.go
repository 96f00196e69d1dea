package peer_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/barometer-scaler/barometer/internal/testbin"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/peer"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	peerv1 "github.com/barometer-scaler/barometer/proto/barometer/peer/v1"
)

const (
	pushToken = "token-of-shop"
	peerToken = "token-of-the-peers"
	// collectorToken may write every namespace, as a cluster's collector.
	collectorToken = "token-of-the-collector"
)

// replica is one scaler replica's push path on loopback: the real
// receiver, its store, and its peering.
type replica struct {
	push  *receiver.Push
	recv  *receiver.Receiver
	peers *peer.Peers
	reg   *prometheus.Registry
	stop  func()
}

// freeAddr is a loopback address nothing listens on now, for a replica
// that the others must name before it starts.
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := testbin.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// secrets writes the push credentials (one token for namespace shop) and
// the peer token.
func secrets(t testing.TB) (creds, token string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"shop.token":       pushToken + "\n",
		"peer.token":       peerToken + "\n",
		"collector.token":  collectorToken + "\n",
		"credentials.yaml": "credentials: [{name: shop, token_file: shop.token, namespaces: [shop]}, {name: collector, token_file: collector.token, namespaces: [\"*\"]}]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "credentials.yaml"), filepath.Join(dir, "peer.token")
}

func startReplica(t testing.TB, creds, token, addr string, peers ...string) *replica {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	r := &replica{reg: prometheus.NewRegistry()}
	var err error
	r.push, err = receiver.NewPush(receiver.PushConfig{Config: receiver.Config{GRPCAddress: "127.0.0.1:0"}, Credentials: creds}, logger)
	if err != nil {
		t.Fatal(err)
	}
	r.peers, err = peer.New(peer.Config{Address: addr, Peers: strings.Join(peers, ","), TokenFile: token}, r.push, nil, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	if r.recv, err = r.push.Listen(r.reg.Register, logger); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{r.recv.Run, r.peers.Run} {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				t.Errorf("replica: %v", err)
			}
		})
	}
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(r.stop)
	return r
}

// pushPod pushes one pod's working set with the OTel SDK's exporter to r.
func pushPod(t *testing.T, r *replica, pod string, workingSet float64, attrs ...attribute.KeyValue) {
	t.Helper()
	exp, err := otlpmetricgrpc.New(context.Background(), otlpmetricgrpc.WithEndpoint(r.recv.GRPCAddr().String()), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithHeaders(map[string]string{"authorization": "Bearer " + pushToken}))
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(append([]attribute.KeyValue{attribute.String("k8s.deployment.name", "shop"), attribute.String("k8s.pod.name", pod)}, attrs...)...)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
	g, err := mp.Meter("shop").Float64Gauge(exposition.Activations)
	if err != nil {
		t.Fatal(err)
	}
	g.Record(context.Background(), workingSet)
	// Shutdown exports once, what was recorded.
	if err := mp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

var shop = store.Query{Namespace: "shop", Selector: map[string]string{"k8s.deployment.name": "shop"},
	Metrics: map[string]bool{exposition.Activations: true}, Window: 30 * time.Second}

// pods reads the pods a replica's store holds for shop, by name.
func pods(r *replica) []string {
	var out []string
	for _, x := range r.push.Store().Read(shop) {
		out = append(out, x.Name)
	}
	return out
}

// eventually polls cond for up to 30 s: a forward crosses loopback
// between two goroutines of this process, so a bound, not a margin.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listening waits until a replica's peer listener accepts connections: a
// forward sent before it does is retried only within the send's timeout,
// which a busy machine can spend before the listener is up.
func listening(t *testing.T, addrs ...string) {
	t.Helper()
	for _, addr := range addrs {
		eventually(t, addr+" accepts", func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
}

// A push to either replica reaches both stores, under the namespace the
// receiving replica's credential resolved: a resource that names no
// namespace is written to the credential's only one on both.
func TestForwardedPushesReachEveryReplica(t *testing.T) {
	creds, token := secrets(t)
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := startReplica(t, creds, token, addrA, addrB)
	b := startReplica(t, creds, token, addrB, addrA)
	listening(t, addrA, addrB)

	pushPod(t, a, "shop-1", 60_000, attribute.String("k8s.namespace.name", "shop"))
	pushPod(t, b, "shop-2", 60_000) // no namespace: the credential's
	want := []string{"shop-1", "shop-2"}
	for name, r := range map[string]*replica{"a": a, "b": b} {
		eventually(t, name+" holds both pods", func() bool { return reflect.DeepEqual(pods(r), want) })
	}
	eventually(t, "both read alike", func() bool { return reflect.DeepEqual(a.push.Store().Read(shop), b.push.Store().Read(shop)) })
	// Stored on the peer and not forwarded back: each replica forwarded
	// exactly the one push it received, and received the other's. (A
	// replica may hold the other's pod before its forward arrives: a
	// starting replica takes its peer's store, and b's start can read a's
	// after the push.)
	for name, r := range map[string]*replica{"a": a, "b": b} {
		eventually(t, name+" counts its forward", func() bool { return counter(t, r.reg, "barometer_otlp_peer_forwards_total", "sent") == 1 })
	}
	for name, r := range map[string]*replica{"a": a, "b": b} {
		if got := counter(t, r.reg, "barometer_otlp_peer_pushes_received_total", ""); got != 1 {
			t.Errorf("%s received %v forwarded pushes, want 1", name, got)
		}
	}
}

// A replica that starts takes a running peer's store whole, and its
// HeldSince becomes the peer's: it holds what the peer held.
func TestStartingReplicaTakesThePeersState(t *testing.T) {
	creds, token := secrets(t)
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := startReplica(t, creds, token, addrA, addrB)
	for _, pod := range []string{"shop-1", "shop-2", "shop-3"} {
		pushPod(t, a, pod, 60_000, attribute.String("k8s.namespace.name", "shop"))
	}
	b := startReplica(t, creds, token, addrB, addrA)
	eventually(t, "b took a's state", func() bool {
		return counter(t, b.reg, "barometer_otlp_peer_restores_total", "ok") == 1
	})
	if got, want := b.push.Store().Read(shop), a.push.Store().Read(shop); len(want) != 3 || !reflect.DeepEqual(got, want) {
		t.Errorf("b reads\n%+v\nwhere a reads\n%+v", got, want)
	}
	if since := b.push.Store().HeldSince(); since.After(a.push.Store().HeldSince().Add(time.Second)) {
		t.Errorf("b holds every push since %v; a since %v", since, a.push.Store().HeldSince())
	}
}

// The peer listener refuses a call without the peer token, and one with
// a push credential's token, before it reads the message.
func TestPeerListenerNeedsThePeerToken(t *testing.T) {
	creds, token := secrets(t)
	addr := freeAddr(t)
	startReplica(t, creds, token, addr)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, tok := range []string{"", pushToken} {
		ctx := context.Background()
		if tok != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		}
		_, err := colmetrics.NewMetricsServiceClient(conn).Export(ctx, &colmetrics.ExportMetricsServiceRequest{})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("export with %q: %v, want Unauthenticated", tok, err)
		}
		stream, err := peerv1.NewPeerServiceClient(conn).Snapshot(ctx, &peerv1.SnapshotRequest{})
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("snapshot with %q: %v, want Unauthenticated", tok, err)
		}
	}
}

// A peer that does not answer costs a bounded queue: past MaxQueueBytes
// the oldest pushes are dropped and counted.
func TestQueueToADeadPeerIsBounded(t *testing.T) {
	creds, token := secrets(t)
	logger := slog.New(slog.DiscardHandler)
	push, err := receiver.NewPush(receiver.PushConfig{Config: receiver.Config{GRPCAddress: "127.0.0.1:0"}, Credentials: creds}, logger)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 4 << 10
	p, err := peer.New(peer.Config{Address: "127.0.0.1:0", Peers: freeAddr(t), TokenFile: token, MaxQueueBytes: limit}, push, nil, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	recv, err := push.Listen(reg.Register, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = recv.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	r := &replica{push: push, recv: recv}
	eventually(t, "linked to the dead peer", func() bool { return gauge(t, reg, "barometer_otlp_peers") == 1 })
	for i := range 40 {
		pushPod(t, r, "shop-"+string(rune('a'+i%26))+string(rune('a'+i/26)), 60_000, attribute.String("k8s.namespace.name", "shop"))
	}
	if q := gauge(t, reg, "barometer_otlp_peer_queue_bytes"); q > limit+2<<10 {
		t.Errorf("%v bytes queued for a dead peer, over the cap of %d and one push", q, limit)
	}
	if counter(t, reg, "barometer_otlp_peer_forwards_total", "dropped") == 0 {
		t.Error("nothing dropped past the cap")
	}
}

func counter(t testing.TB, reg *prometheus.Registry, name, result string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if result == "" || len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func gauge(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	v, err := testutil.GatherAndCount(reg, name)
	if err != nil || v == 0 {
		return 0
	}
	fams, _ := reg.Gather()
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}
