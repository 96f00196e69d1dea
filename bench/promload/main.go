// Command promload measures what the prometheus source costs a real
// Prometheus: it starts one (Debian's binary, .ci/install-prometheus.sh)
// on a loopback port, scraping N demo workloads served in this process,
// and samples N targets at an aligned interval through one shared
// querypool.Pool, as a scaler does. It reports the queries the server
// answered per interval (its own prometheus_http_requests_total), how many
// it answered with 503, the samples that failed, the targets that never
// had a good sample, and the Pool's own counts and queue wait.
//
// Two phases: "distinct", N targets each reading its own workload (a
// selector of its own, so no query is shared), and "identical", N targets
// reading the same workload with the same queries (every query shared).
//
//	go run ./bench/promload                       # 100 targets, 5 s, 4 samples each phase
//	go run ./bench/promload -targets 100 -interval 5s -samples 6
//
// Everything listens on 127.0.0.1 and stops when the program ends.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
)

func main() {
	targets := flag.Int("targets", 100, "targets (and demo workloads), at most 500")
	interval := flag.Duration("interval", 5*time.Second, "sample interval, which samples align to")
	samples := flag.Int("samples", 4, "samples per target per phase, at most 20")
	inFlight := flag.Int("max-in-flight", 0, "the Pool's bound on queries in flight (0: querypool.DefaultMaxInFlight)")
	flag.Parse()
	if *targets < 1 || *targets > 500 || *samples < 1 || *samples > 20 || *interval < time.Second || *interval > time.Minute {
		fmt.Fprintln(os.Stderr, "promload: -targets 1..500, -samples 1..20, -interval 1s..1m")
		os.Exit(2)
	}
	if err := run(*targets, *interval, *samples, *inFlight); err != nil {
		fmt.Fprintln(os.Stderr, "promload:", err)
		os.Exit(1)
	}
}

func run(n int, interval time.Duration, samples, inFlight int) error {
	dir, err := os.MkdirTemp("", "promload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var urls []string
	for range n {
		w := demo.New(demo.Config{Queue: true})
		w.SetLoad(50)
		srv := httptest.NewServer(w.Handler())
		defer srv.Close()
		urls = append(urls, srv.URL+"/metrics")
	}
	addr, stop, err := startPrometheus(dir, urls, interval)
	if err != nil {
		return err
	}
	defer stop()
	server := "http://" + addr
	client, err := api.NewClient(api.Config{Address: server})
	if err != nil {
		return err
	}
	prom := v1.NewAPI(client)
	// Two scrapes of every workload, so the CPU rate reads everywhere.
	if err := waitSeries(prom, `irate(process_cpu_seconds_total[5m])`, n, 3*interval+30*time.Second); err != nil {
		return err
	}
	fmt.Printf("prometheus %s scraping %d workloads every %v; %d targets sampled every %v, %d samples per phase\n",
		server, n, interval, n, interval, samples)
	for _, identical := range []bool{false, true} {
		if err := phase(server, n, interval, samples, inFlight, identical); err != nil {
			return err
		}
	}
	return nil
}

// phase samples n targets samples times and reports.
func phase(server string, n int, interval time.Duration, samples, inFlight int, identical bool) error {
	pool := querypool.New(inFlight)
	reg := prometheus.NewRegistry()
	reg.MustRegister(pool)
	var sources []*promsource.Source
	for i := range n {
		selector := fmt.Sprintf(`job="w%d"`, i)
		if identical {
			selector = `job="w0"`
		}
		src, err := promsource.New(promsource.Options{
			ServerAddress: server, Queries: promsource.DefaultQueries(exposition.DefaultNames(), selector, 0),
			Align: interval, Pool: pool,
		})
		if err != nil {
			return err
		}
		sources = append(sources, src)
	}
	before, err := served(server)
	if err != nil {
		return err
	}
	ok := make([]int, n)
	var (
		mu       sync.Mutex
		failures = map[string]int{}
	)
	// Each target samples at the interval's multiples, as aligned
	// samplers do, from the next one on.
	first := time.Now().Truncate(interval).Add(interval)
	var wg sync.WaitGroup
	for i, src := range sources {
		wg.Go(func() {
			for k := range samples {
				time.Sleep(time.Until(first.Add(time.Duration(k) * interval)))
				ctx, cancel := context.WithTimeout(context.Background(), interval)
				_, err := src.Observe(ctx)
				cancel()
				if err != nil {
					mu.Lock()
					failures[errorKind(err)]++
					mu.Unlock()
					continue
				}
				ok[i]++
			}
		})
	}
	wg.Wait()
	after, err := served(server)
	if err != nil {
		return err
	}
	cold, good := 0, 0
	for _, k := range ok {
		if k == 0 {
			cold++
		}
		good += k
	}
	name := "distinct"
	if identical {
		name = "identical"
	}
	queries := after.total - before.total
	fmt.Printf("\n%s: %d targets x %d samples\n", name, n, samples)
	fmt.Printf("  queries answered by the server: %.0f, %.2f per interval, %.3f per target per interval\n",
		queries, queries/float64(samples), queries/float64(samples*n))
	fmt.Printf("  answered 503: %.0f; other non-2xx: %.0f\n", after.unavailable-before.unavailable, after.failed-before.failed)
	fmt.Printf("  samples good: %d of %d; targets never warm: %d\n", good, n*samples, cold)
	for k, v := range failures {
		fmt.Printf("  failed samples, %s: %d\n", k, v)
	}
	return report(reg)
}

// errorKind shortens an error to what tells failures apart.
func errorKind(err error) string {
	s := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case strings.Contains(s, "503"):
		return "503"
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// report prints the Pool's metrics.
func report(reg *prometheus.Registry) error {
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				fmt.Printf("  %s: %.0f\n", mf.GetName(), m.GetCounter().GetValue())
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				fmt.Printf("  %s: %d waits, mean %.1f ms, ", mf.GetName(), h.GetSampleCount(), 1000*h.GetSampleSum()/float64(max(1, h.GetSampleCount())))
				var under []string
				for _, b := range h.GetBucket() {
					under = append(under, fmt.Sprintf("<=%gs %d", b.GetUpperBound(), b.GetCumulativeCount()))
				}
				fmt.Println(strings.Join(under, ", "))
			}
		}
	}
	return nil
}

// counts are the server's own request counts of its query endpoint.
type counts struct{ total, unavailable, failed float64 }

// served reads prometheus_http_requests_total of /api/v1/query from the
// server's own exposition, which counts a request once it is answered.
func served(server string) (counts, error) {
	resp, err := http.Get(server + "/metrics")
	if err != nil {
		return counts{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return counts{}, err
	}
	var c counts
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, "prometheus_http_requests_total{") || !strings.Contains(line, `handler="/api/v1/query"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			return c, fmt.Errorf("%q: %w", line, err)
		}
		c.total += v
		switch {
		case strings.Contains(line, `code="503"`):
			c.unavailable += v
		case !strings.Contains(line, `code="2`):
			c.failed += v
		}
	}
	return c, nil
}

func waitSeries(prom v1.API, q string, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, _, _, err := prom.Query(ctx, q, time.Now())
		cancel()
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: fewer than %d series after %v (err %v)", q, n, within, err)
		}
		time.Sleep(time.Second)
	}
}

// startPrometheus runs Debian's prometheus on a loopback port with its
// default query settings, scraping each URL as job w<i> with a pod label,
// until the returned stop.
func startPrometheus(dir string, urls []string, every time.Duration) (addr string, stop func(), err error) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return "", nil, fmt.Errorf("prometheus not installed (bash .ci/install-prometheus.sh): %w", err)
	}
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var jobs []map[string]any
	for i, raw := range urls {
		host := strings.TrimSuffix(strings.TrimPrefix(raw, "http://"), "/metrics")
		jobs = append(jobs, map[string]any{"job_name": fmt.Sprint("w", i),
			"static_configs": []static{{Targets: []string{host}, Labels: map[string]string{"pod": fmt.Sprint("w", i, "-0")}}}})
	}
	sort.Slice(jobs, func(a, b int) bool { return fmt.Sprint(jobs[a]["job_name"]) < fmt.Sprint(jobs[b]["job_name"]) })
	cfg, _ := json.Marshal(map[string]any{
		"global":         map[string]string{"scrape_interval": every.String(), "scrape_timeout": every.String(), "evaluation_interval": every.String()},
		"scrape_configs": jobs,
	})
	path := filepath.Join(dir, "prometheus.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr = l.Addr().String()
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr, stop, nil
			}
		}
	}
	stop()
	return "", nil, errors.New("prometheus not ready within 30s")
}
