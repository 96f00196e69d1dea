package dataage_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/internal/otelcoltest"
	"github.com/barometer-scaler/barometer/internal/promtest"
	"github.com/barometer-scaler/barometer/pkg/decide"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/target"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

var (
	interval = flag.Duration("interval", time.Second, "the sample interval, the OTLP export interval and Prometheus' scrape interval")
	samples  = flag.Int("samples", 10, "samples measured per source and trial, after the warm-up")
	warmup   = flag.Int("warmup", 3, "samples of each trial not measured (Prometheus' first scrapes, the first pushes)")
	trials   = flag.Int("trials", 4, "trials, each with fresh processes and fresh export phases")
	pods     = flag.Int("pods", 3, "replicas of the workload")
)

// The sources compared.
const (
	srcScrape     = "scrape"
	srcOTLP       = "otlp"
	srcCollector  = "otlp via otelcol"
	srcPrometheus = "prometheus"
)

const (
	// lagSuffix names the age the lag counts, beside /scale's.
	lagSuffix = " (lag)"
	namespace = "bench"
	token     = "bench-token"
)

// BenchmarkDataAge measures the data age of every sample (what /scale
// serves as dataAgeSeconds: the sample's instant less its data's
// measurement time) of four sources reading the same workload at the same
// interval, each through the real sampler, aligned, as the scaler runs it:
//   - scrape: the scrape source scrapes each replica at the sample;
//   - otlp: each replica pushes with the OTel SDK (a periodic reader at
//     the interval, started at a random phase) to the receiver, and the
//     otlp source reads the store;
//   - otlp via otelcol: the same pushes through the README's collector
//     batch (timeout 1 s), when the otelcol binary is there;
//   - prometheus: a real Prometheus scrapes each replica at the interval
//     and the prometheus source queries it (its default queries).
//
// Each trial starts everything anew, so the export and scrape phases,
// which decide the ages, are drawn again. Run it once:
//
//	go test -run '^$' -bench DataAge -benchtime 1x ./bench/dataage/
//
// Each trial reports p50 and p99 (seconds) per source; a table at the end
// has them over every trial's samples.
func BenchmarkDataAge(b *testing.B) {
	ages := map[string][]float64{}
	for trial := range *trials {
		b.Run(fmt.Sprintf("trial=%d", trial), func(b *testing.B) {
			for src, a := range runTrial(b, trial) {
				if strings.HasSuffix(src, lagSuffix) && src != srcScrape+lagSuffix {
					continue // the same as /scale's, but for a scrape
				}
				ages[src] = append(ages[src], a...)
				report(b, src, a)
			}
		})
	}
	var table strings.Builder
	fmt.Fprintf(&table, "interval %v, %d replicas, %d trials of %d samples\n", *interval, *pods, *trials, *samples)
	fmt.Fprintf(&table, "| source | samples | p50 (s) | p99 (s) | max (s) |\n| --- | --- | --- | --- | --- |\n")
	for _, src := range []string{srcScrape, srcScrape + lagSuffix, srcOTLP, srcCollector, srcPrometheus} {
		if a := ages[src]; len(a) > 0 {
			fmt.Fprintf(&table, "| %s | %d | %.3f | %.3f | %.3f |\n", src, len(a), quantile(a, 0.5), quantile(a, 0.99), slices.Max(a))
		}
	}
	// Printed, not logged: a benchmark's log shows only with -v.
	fmt.Print("all trials:\n" + table.String())
}

// report reports one trial's p50 and p99 of src's ages.
func report(b *testing.B, src string, ages []float64) {
	if len(ages) == 0 {
		b.Errorf("%s: no sample measured", src)
		return
	}
	unit := strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(src)
	b.ReportMetric(quantile(ages, 0.5), unit+"-p50-s")
	b.ReportMetric(quantile(ages, 0.99), unit+"-p99-s")
}

// runTrial runs every source for warmup+samples samples and returns the
// measured ages per source. What it starts stops when it returns, or (the
// Prometheus and the collector) when b ends.
func runTrial(b *testing.B, trial int) map[string][]float64 {
	ctx, cancel := context.WithCancel(context.Background())
	var stops []func()
	defer func() {
		cancel()
		for _, stop := range slices.Backward(stops) {
			stop()
		}
	}()

	// The workload: one state, each replica its own /metrics listener.
	w := demo.New(demo.DefaultConfig())
	w.SetLoad(50)
	var targets []promtest.Target
	var scrapeTargets []target.Target
	for i := range *pods {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(l) }()
		stops = append(stops, func() { _ = srv.Close() })
		url := "http://" + l.Addr().String() + "/metrics"
		targets = append(targets, promtest.Target{URL: url, Labels: map[string]string{"pod": fmt.Sprintf("demo-%d", i)}})
		tg, err := target.Parse(url)
		if err != nil {
			b.Fatal(err)
		}
		scrapeTargets = append(scrapeTargets, tg)
	}

	// Barometer's OTLP receiver and store.
	st, recv := startReceiver(b, &stops)
	sources := map[string]pressure.Source{}
	var err error
	if sources[srcScrape], err = scrape.New(scrape.Options{Targets: scrapeTargets, Names: exposition.DefaultNames(), Timeout: *interval / 2}); err != nil {
		b.Fatal(err)
	}
	if sources[srcOTLP], err = otlpSource(st, "direct"); err != nil {
		b.Fatal(err)
	}
	pushers := map[string]string{"direct": recv.GRPCAddr().String()}
	if _, err := otelcoltest.Lookup(); err == nil {
		c := otelcoltest.Start(b, func(addr string) ([]byte, error) { return collectorConfig(addr, recv.GRPCAddr().String()) })
		pushers["collector"] = c.GRPCAddr
		if sources[srcCollector], err = otlpSource(st, "collector"); err != nil {
			b.Fatal(err)
		}
	} else if trial == 0 {
		b.Logf("no %q: %v", srcCollector, err)
	}
	// Each replica exports from its own meter provider, started at a
	// random phase of the interval, as pods started at different times.
	var started sync.WaitGroup
	var pushMu sync.Mutex
	var pushErrs []error
	for deployment, endpoint := range pushers {
		for i := range *pods {
			started.Go(func() {
				time.Sleep(rand.N(*interval)) // the phase; not a wait for a result
				stop, err := push(w, endpoint, deployment, fmt.Sprintf("%s-%d", deployment, i))
				pushMu.Lock()
				defer pushMu.Unlock()
				if err != nil {
					pushErrs = append(pushErrs, err)
					return
				}
				stops = append(stops, stop)
			})
		}
	}
	started.Wait()
	if err := errors.Join(pushErrs...); err != nil {
		b.Fatal(err)
	}
	prom := promtest.Start(b, targets, promtest.Options{ScrapeInterval: *interval})
	if sources[srcPrometheus], err = promsource.New(promsource.Options{
		ServerAddress: prom.URL, Queries: promsource.DefaultQueries(exposition.DefaultNames(), "", 0), Align: *interval,
	}); err != nil {
		b.Fatal(err)
	}

	// One aligned sampler per source: they sample at the same instants.
	out := map[string][]float64{}
	var mu sync.Mutex
	var measured, running sync.WaitGroup
	for name, src := range sources {
		rec := &recorder{Source: src}
		s := sampling.NewSampler(sampling.SamplerConfig{Source: rec, Decider: decider(b, name), Interval: *interval, Align: true})
		running.Go(func() { s.Run(ctx) })
		measured.Go(func() {
			served, lag := measure(ctx, s, rec)
			mu.Lock()
			out[name], out[name+lagSuffix] = served, lag
			mu.Unlock()
		})
	}
	measured.Wait()
	cancel()
	running.Wait()
	return out
}

// measure waits for warmup samples of s, then returns, for the next
// samples ones that succeed, the data age /scale serves and the age the
// signal's lag counts (rec's). A failed sample (Prometheus before its
// first scrapes) is not measured; at most 3 x samples are waited for.
func measure(ctx context.Context, s *sampling.Sampler, rec *recorder) (served, lag []float64) {
	for n := 0; n < *warmup+3**samples && len(served) < *samples; n++ {
		snap := s.Load()
		select {
		case <-ctx.Done():
			return served, lag
		case <-snap.Next():
		}
		snap = s.Load()
		age, ok := snap.Signal.DataAge()
		if n < *warmup || !ok || snap.LastErr != nil {
			continue
		}
		served = append(served, age.Seconds())
		if l, ok := rec.last(); ok {
			lag = append(lag, l.Seconds())
		}
	}
	return served, lag
}

// recorder is a source that keeps the age of its last observation as the
// sampler folds it into the lag (pkg/sampling's foldedMeasuredAt): an
// aligned sample folds at its instant, and data measured after that
// instant (a scrape taken during the sample) counts as old as it was when
// the sample finished. /scale's dataAgeSeconds is the instant less the
// measurement, 0 for such data.
type recorder struct {
	pressure.Source
	mu  sync.Mutex
	age time.Duration
	ok  bool
}

func (r *recorder) Observe(ctx context.Context) (pressure.Observation, error) {
	at := time.Now().Truncate(*interval)
	obs, err := r.Source.Observe(ctx)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ok = err == nil && !obs.MeasuredAt.IsZero()
	if obs.MeasuredAt.After(at) {
		r.age = now.Sub(obs.MeasuredAt)
	} else {
		r.age = at.Sub(obs.MeasuredAt)
	}
	return obs, err
}

func (r *recorder) last() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.age, r.ok
}

func decider(b *testing.B, name string) decide.Decider {
	tr := &trigger.Spec{Policy: trigger.PolicySpec{Name: signal.PolicyPressure}, Signal: signal.DefaultOptions(), Interval: *interval}
	d, err := decide.NewEngine(decide.Config{}).New(namespace+"/"+name, tr, nil, time.Now(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func startReceiver(b *testing.B, stops *[]func()) (*store.Store, *receiver.Receiver) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600); err != nil {
		b.Fatal(err)
	}
	creds := "credentials:\n  - name: bench\n    token_file: token\n    namespaces: [" + namespace + "]\n"
	if err := os.WriteFile(filepath.Join(dir, "credentials.yaml"), []byte(creds), 0o600); err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	c, err := receiver.LoadCredentials(filepath.Join(dir, "credentials.yaml"), reg, nil)
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.New(store.Options{}, reg)
	if err != nil {
		b.Fatal(err)
	}
	recv, err := receiver.New(receiver.Config{GRPCAddress: "127.0.0.1:0"}, st, c, reg, nil)
	if err != nil {
		b.Fatal(err)
	}
	// Its own context: it outlives the samplers, so the pushers' last
	// exports, at their shutdown, still land.
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = recv.Run(rctx) }()
	*stops = append(*stops, func() { cancel(); <-done })
	return st, recv
}

func otlpSource(st *store.Store, deployment string) (*otlp.Source, error) {
	return otlp.New(st, otlp.Config{
		Namespace: namespace, Selector: map[string]string{"k8s.deployment.name": deployment},
		Window: 30 * time.Second, MaxAge: 30 * time.Second, Names: exposition.DefaultNames(),
	}, nil)
}

// push starts pod's OTel SDK exporting w's contract to endpoint every
// interval, as the demo workload does; the returned func stops it.
func push(w *demo.Workload, endpoint, deployment, pod string) (func(), error) {
	exp, err := otlpmetricgrpc.New(context.Background(), otlpmetricgrpc.WithEndpoint(endpoint), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false}),
		otlpmetricgrpc.WithHeaders(map[string]string{"authorization": "Bearer " + token}))
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(resource.NewSchemaless(
			attribute.String("k8s.namespace.name", namespace),
			attribute.String("k8s.deployment.name", deployment),
			attribute.String("k8s.pod.name", pod))),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(*interval))))
	stop := func() { _ = mp.Shutdown(context.Background()) }
	if err := w.RegisterOTel(mp.Meter("demo")); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// collectorConfig is a collector receiving on addr and exporting to
// Barometer's plain gRPC listener with the README's batch (1 s): the
// filter and the TLS of the README's pipeline cost no time worth
// measuring here, the batch does.
func collectorConfig(addr, barometer string) ([]byte, error) {
	return json.Marshal(map[string]any{
		"receivers":  map[string]any{"otlp": map[string]any{"protocols": map[string]any{"grpc": map[string]any{"endpoint": addr}}}},
		"processors": map[string]any{"batch/barometer": map[string]any{"timeout": "1s"}},
		"exporters": map[string]any{"otlp/barometer": map[string]any{
			"endpoint": barometer, "tls": map[string]any{"insecure": true},
			"headers": map[string]any{"authorization": "Bearer " + token},
		}},
		"service": map[string]any{
			"telemetry": map[string]any{"metrics": map[string]any{"level": "none"}},
			"pipelines": map[string]any{"metrics/barometer": map[string]any{
				"receivers": []string{"otlp"}, "processors": []string{"batch/barometer"}, "exporters": []string{"otlp/barometer"},
			}},
		},
	})
}

// quantile is the q-quantile of xs, interpolated between the closest ranks.
func quantile(xs []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}
