package demo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// The demo pushes with the real OTel SDK exporter to the real receiver,
// and the otlp source reads what the replica shows: the same figures a
// scrape of its /metrics gives, queue included.
func TestPushReadsAsTheState(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("demo-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds, err := receiver.ParseCredentials([]byte("credentials: [{name: demo, token_file: token, namespaces: [demo]}]"), dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(store.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	recv, err := receiver.New(receiver.Config{GRPCAddress: "127.0.0.1:0"}, st, creds, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	clk := &clock{now: time.Now()}
	w := New(Config{Now: clk.Now, Queue: true})
	w.SetLoad(80)
	exp, err := otlpmetricgrpc.New(context.Background(), otlpmetricgrpc.WithEndpoint(recv.GRPCAddr().String()),
		otlpmetricgrpc.WithInsecure(), otlpmetricgrpc.WithHeaders(map[string]string{"authorization": "Bearer demo-token"}))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("k8s.namespace.name", "demo"),
			attribute.String("k8s.deployment.name", "demo-workload"), attribute.String("k8s.pod.name", "demo-0"))),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(time.Hour))))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	if err := w.RegisterOTel(mp.Meter("demo")); err != nil {
		t.Fatal(err)
	}
	clk.Add(10 * time.Second)
	if err := mp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := w.State() // the clock stood still since the push

	src, err := otlp.New(st, otlp.Config{Namespace: "demo", Selector: map[string]string{"k8s.deployment.name": "demo-workload"},
		Names: exposition.DefaultNames()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Replicas) != 1 {
		t.Fatalf("replicas %+v", obs.Replicas)
	}
	r := obs.Replicas[0]
	if r.Name != "demo-0" || r.WorkingSet != s.WorkingSet || r.MemoryUsedBytes != s.MemoryBytes ||
		r.MemoryLimitBytes != s.MemoryLimitBytes || r.WalSaturation != pressure.Throttled {
		t.Errorf("replica %+v, want the state %+v", r, s)
	}
	if q := obs.Queue; q == nil || q.Arrivals != s.Queue.Arrivals || q.Runs != s.Queue.Runs || q.RunSeconds != s.Queue.RunSeconds {
		t.Errorf("queue %+v, want %+v", obs.Queue, s.Queue)
	}
	if len(obs.Trees) != 1 || float64(obs.Trees[0].RetainedBytes) != s.TreeRetained {
		t.Errorf("trees %+v", obs.Trees)
	}
}
