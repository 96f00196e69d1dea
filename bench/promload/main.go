// Command promload measures what the prometheus source costs a real
// Prometheus from a cold start, as KEDA drives the scaler: it starts
// Debian's prometheus (.ci/install-prometheus.sh) on a loopback port,
// scraping N demo workloads served in this process, puts a recording
// proxy in front of it, starts the scaler binary (built from ./cmd/scaler
// unless -scaler names one; -replicas of them) and creates N ScaledObjects
// at once on each through KEDA's generated gRPC client (GetMetricSpec),
// then reads them (GetMetrics) every second for -for. Everything the server receives is
// counted from the outside, at the proxy: per target and per sample
// interval (wall-clock multiples, as the samplers align), by kind
// (instant, the backfill's range, the forecast's history ranges), with
// its status and whether the scaler gave up on it first. The proxy can
// add -delay to every query, as a slower server would.
//
// Two phases, each a fresh scaler (a cold start): "distinct", target i
// reading workload w<i> (no query in common), and "identical", every
// target reading w0 with the same queries (each a sampler of its own, by
// a scale-in hold of its own), so every query can be shared.
//
//	go run ./bench/promload                                  # 100 targets, 5 s, 2 minutes a phase
//	go run ./bench/promload -delay 100ms -phase distinct
//	go run ./bench/promload -for 65m -phase distinct         # the first hour's history reads
//	go run ./bench/promload -replicas 2 -phase distinct      # two scaler replicas
//
// Everything listens on 127.0.0.1 and stops when the program ends.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
)

type options struct {
	targets        int
	interval       time.Duration
	runFor         time.Duration
	delay          time.Duration
	phase          string
	scaler         string
	maxConcurrency int
	queryTimeout   time.Duration
	replicas       int
}

func main() {
	var o options
	flag.IntVar(&o.targets, "targets", 100, "ScaledObjects (and demo workloads), at most 500")
	flag.DurationVar(&o.interval, "interval", 5*time.Second, "sample and scrape interval")
	flag.DurationVar(&o.runFor, "for", 2*time.Minute, "how long each phase runs after its cold start")
	flag.DurationVar(&o.delay, "delay", 0, "added to every query by the proxy, as a slower server")
	flag.StringVar(&o.phase, "phase", "both", "distinct, identical or both")
	flag.StringVar(&o.scaler, "scaler", "", "the scaler binary to run (default: go build ./cmd/scaler)")
	flag.IntVar(&o.maxConcurrency, "max-concurrency", 4, "the server's --query.max-concurrency")
	flag.DurationVar(&o.queryTimeout, "query-timeout", 2*time.Second, "the server's --query.timeout")
	flag.IntVar(&o.replicas, "replicas", 1, "scaler replicas, each asked for every ScaledObject (as KEDA spreads its calls)")
	flag.Parse()
	if o.targets < 1 || o.targets > 500 || o.interval < time.Second || o.interval > time.Minute || o.replicas < 1 || o.replicas > 4 ||
		o.runFor < 4*o.interval || o.delay < 0 || (o.phase != "both" && o.phase != "distinct" && o.phase != "identical") {
		fmt.Fprintln(os.Stderr, "promload: -targets 1..500, -interval 1s..1m, -replicas 1..4, -for at least 4 intervals, -delay >= 0, -phase distinct|identical|both")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "promload:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "promload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.scaler
	if bin == "" {
		if bin, err = buildScaler(dir); err != nil {
			return err
		}
	}
	var urls []string
	for range o.targets {
		w := demo.New(demo.Config{Queue: true})
		w.SetLoad(50)
		srv := httptest.NewServer(w.Handler())
		defer srv.Close()
		urls = append(urls, srv.URL+"/metrics")
	}
	prom, err := startPrometheus(dir, urls, o)
	if err != nil {
		return err
	}
	defer prom.stop()
	// Two scrapes of every workload, so the CPU rate reads everywhere.
	if err := prom.waitSeries(`irate(process_cpu_seconds_total[5m])`, o.targets, 3*o.interval+30*time.Second); err != nil {
		return err
	}
	px, err := newProxy(prom.url, o.delay, o.interval)
	if err != nil {
		return err
	}
	front := httptest.NewServer(px)
	defer front.Close()
	fmt.Printf("prometheus %s (--query.max-concurrency=%d --query.timeout=%v) scraping %d workloads every %v, behind a proxy adding %v per query\n",
		prom.url, o.maxConcurrency, o.queryTimeout, o.targets, o.interval, o.delay)
	fmt.Printf("scaler %s, %d replica(s); %d ScaledObjects at a %v interval, %v a phase\n", bin, o.replicas, o.targets, o.interval, o.runFor)
	for _, identical := range []bool{false, true} {
		if o.phase == "distinct" && identical || o.phase == "identical" && !identical {
			continue
		}
		if err := phase(o, bin, dir, front.URL, px, identical); err != nil {
			return err
		}
	}
	return nil
}

// phase starts the scaler replicas, creates the ScaledObjects from cold
// on each, reads them for o.runFor and reports what the server received
// meanwhile.
func phase(o options, bin, dir, server string, px *proxy, identical bool) error {
	name := "distinct"
	if identical {
		name = "identical"
	}
	var (
		replicas []*scaler
		sos      [][]*scaledObject
	)
	for r := range o.replicas {
		s, err := startScaler(bin, filepath.Join(dir, fmt.Sprintf("scaler-%s-%d.log", name, r)), o.interval)
		if err != nil {
			return err
		}
		defer s.stop()
		replicas = append(replicas, s)
		sos = append(sos, scaledObjects(o.targets, server, identical))
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.runFor)
	defer cancel()
	begin := time.Now()
	for r, s := range replicas {
		if err := s.create(ctx, sos[r]); err != nil {
			return fmt.Errorf("GetMetricSpec: %w", err)
		}
	}
	created := time.Since(begin)
	var wg sync.WaitGroup
	for r, s := range replicas {
		wg.Go(func() { s.poll(ctx, sos[r], time.Second) })
	}
	wg.Wait()
	r := newReport(o, begin, slices.Concat(sos...), px.since(begin))
	fmt.Printf("\n%s: %d ScaledObjects created on %d scaler replica(s) in %v, read for %v\n", name, o.targets, o.replicas, created.Round(time.Millisecond), o.runFor)
	if identical {
		r.identical()
	} else {
		r.distinct()
	}
	r.warmth()
	r.history()
	for i, s := range replicas {
		sent, shared, notSent := s.poolCounts()
		fmt.Printf("  replica %d's query pool: %.0f sent, %.0f shared, %.0f not sent for want of time to answer\n", i, sent, shared, notSent)
		if n := s.forecastWaiting(sos[i]); n >= 0 {
			fmt.Printf("  /scale of replica %d: %d of %d say the forecast has read no history yet\n", i, n, len(sos[i]))
		}
	}
	return nil
}
