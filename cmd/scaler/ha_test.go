package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/barometer-scaler/barometer/internal/testbin"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// asScaler makes the test binary run `scaler serve` instead of the tests:
// the HA test starts scaler processes from it, so that it can kill one
// with SIGKILL.
const asScaler = "BAROMETER_TEST_AS_SCALER"

func TestMain(m *testing.M) {
	if os.Getenv(asScaler) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := run(ctx, []string{"serve"}, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "scaler:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The pool of the HA test: four replicas pushing a working set of 60,000
// each, 0.6 of the activation target, so the pool's value is 4 x 0.6.
const (
	haReplicas = 4
	haPool     = 2.4
)

// TestReplicasAnswerTheWholePool is the many-replicas promise for OTLP
// (docs/operations.md, "HA: many scaler replicas, one answer"): two
// scaler processes on loopback, each naming the other as its peer,
// answer KEDA's GetMetrics with the whole pool on every read, whether the
// four replicas' pushes are split between them or all go through one;
// and a scaler killed with SIGKILL and restarted answers nothing below
// the whole pool from its first answer on.
func TestReplicasAnswerTheWholePool(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"shop.token":       "token-of-shop\n",
		"peer.token":       "token-of-the-peers\n",
		"credentials.yaml": "credentials: [{name: shop, token_file: shop.token, namespaces: [shop]}]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, b := newScalerProc(t, dir, "a"), newScalerProc(t, dir, "b")
	a.env = append(a.env, "BAROMETER_PEERS="+b.peer)
	b.env = append(b.env, "BAROMETER_PEERS="+a.peer)
	a.start(t)
	b.start(t)

	// Two replicas push to each scaler, as SDK exporters spread by a
	// Service's connections would.
	pushers := make([]*pusher, haReplicas)
	for i := range pushers {
		to := a
		if i >= haReplicas/2 {
			to = b
		}
		pushers[i] = startPusher(t, fmt.Sprintf("shop-%d", i+1), to.otlp)
	}
	readWholePool(t, "pushes split between the scalers", a, b)

	// Then all four through one (a collector holds one connection): the
	// two that pushed to b move to a.
	for i := haReplicas / 2; i < haReplicas; i++ {
		old := pushers[i]
		pushers[i] = startPusher(t, old.pod, a.otlp)
		old.stop()
	}
	readWholePool(t, "every push through one scaler", a, b)

	// b dies without a word and starts again: it takes a's store before
	// it answers, so its first answer is the whole pool.
	b.kill()
	b.start(t)
	readWholePool(t, "after b was killed and restarted", a, b)
	if log := b.proc.Output(); !strings.Contains(log, `msg="OTLP peers: took a peer's state" component=otlp-peers peer=`+a.peer+" replicas=4") {
		t.Errorf("b did not take a's four replicas when it restarted; its log:\n%s", log)
	}
}

// readWholePool reads GetMetrics from both scalers, in turns, until each
// has answered 15 times: every answer is the whole pool. A scaler that has
// not sampled yet answers Unavailable, which is no value; a value below
// (or above) the pool's fails the test.
func readWholePool(t *testing.T, phase string, scalers ...*scalerProc) {
	t.Helper()
	answered := make([]int, len(scalers))
	deadline := time.Now().Add(30 * time.Second)
	for {
		done := true
		for i, s := range scalers {
			v, err := s.getMetrics()
			switch {
			case status.Code(err) == codes.Unavailable:
			case err != nil:
				t.Fatalf("%s: %s: GetMetrics: %v", phase, s.name, err)
			case math.Abs(v-haPool) > 1e-9:
				t.Fatalf("%s: %s answered %v after %d answers of the whole pool, %v; its log:\n%s", phase, s.name, v, answered[i], haPool, s.output())
			default:
				answered[i]++
			}
			done = done && answered[i] >= 15
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: answers of the whole pool after 30 s: %v", phase, answered)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scalerProc is a scaler process: the test binary run as `scaler serve`.
type scalerProc struct {
	name                   string
	grpc, http, otlp, peer string
	env                    []string
	proc                   *testbin.Process
	log                    strings.Builder // the output of its runs before this one
	keda                   externalscaler.ExternalScalerClient
}

func newScalerProc(t *testing.T, dir, name string) *scalerProc {
	s := &scalerProc{name: name, grpc: freeLoopback(t), http: freeLoopback(t), otlp: freeLoopback(t), peer: freeLoopback(t)}
	s.env = []string{asScaler + "=1",
		"BAROMETER_GRPC_ADDR=" + s.grpc, "BAROMETER_HTTP_ADDR=" + s.http,
		"BAROMETER_OTLP_GRPC_ADDR=" + s.otlp, "BAROMETER_OTLP_CREDENTIALS=" + filepath.Join(dir, "credentials.yaml"),
		"BAROMETER_PEER_ADDR=" + s.peer, "BAROMETER_PEER_TOKEN_FILE=" + filepath.Join(dir, "peer.token"),
		"BAROMETER_STATUS_PAGE=false", "BAROMETER_SHUTDOWN_DELAY=0s"}
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s.keda = externalscaler.NewExternalScalerClient(conn)
	return s
}

// start runs the process and waits until it is ready (/readyz).
func (s *scalerProc) start(t *testing.T) {
	t.Helper()
	var err error
	if s.proc, err = testbin.StartEnv(os.Args[0], s.env, "-test.run=^$"); err != nil {
		t.Fatal(err)
	}
	s.proc.StopAtCleanup(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + s.http + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-s.proc.Exited():
			t.Fatalf("scaler %s exited: %s", s.name, s.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("scaler %s not ready after 30 s: %v; its log:\n%s", s.name, err, s.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the process with SIGKILL: nothing is drained or handed over.
func (s *scalerProc) kill() {
	s.proc.Kill()
	s.log.WriteString(s.proc.Output())
}

// output is everything the scaler's runs have written.
func (s *scalerProc) output() string { return s.log.String() + s.proc.Output() }

// getMetrics asks as KEDA does for the otlp target of ScaledObject
// shop/shop.
func (s *scalerProc) getMetrics() (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ref := &externalscaler.ScaledObjectRef{Name: "shop", Namespace: "shop", ScalerMetadata: map[string]string{
		"source": "otlp", "resourceSelector": "k8s.deployment.name=shop", "sampleInterval": "200ms", "maxAge": "3s", "window": "3s", "profile": "responsive"}}
	resp, err := s.keda.GetMetrics(ctx, &externalscaler.GetMetricsRequest{ScaledObjectRef: ref, MetricName: "barometer-pressure"})
	if err != nil {
		return 0, err
	}
	return resp.GetMetricValues()[0].GetMetricValueFloat(), nil
}

// pusher is one replica of the workload pushing with the OTel SDK's
// exporter every 100 ms.
type pusher struct {
	pod  string
	mp   *sdkmetric.MeterProvider
	once sync.Once
}

func startPusher(t *testing.T, pod, endpoint string) *pusher {
	t.Helper()
	exp, err := otlpmetricgrpc.New(context.Background(), otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithHeaders(map[string]string{"authorization": "Bearer token-of-shop"}))
	if err != nil {
		t.Fatal(err)
	}
	p := &pusher{pod: pod}
	p.mp = sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("k8s.namespace.name", "shop"),
			attribute.String("k8s.deployment.name", "shop"), attribute.String("k8s.pod.name", pod))),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(100*time.Millisecond))))
	ws, err := p.mp.Meter("shop").Float64ObservableGauge(exposition.Activations,
		metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error { o.Observe(60_000); return nil }))
	if err != nil || ws == nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	return p
}

func (p *pusher) stop() { p.once.Do(func() { _ = p.mp.Shutdown(context.Background()) }) }

// freeLoopback is a loopback address nothing listens on now: a scaler
// process binds it, and its peer names it before it starts.
func freeLoopback(t *testing.T) string {
	t.Helper()
	addr, err := testbin.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
