package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// serveLoopback serves h on a 127.0.0.1 port until the returned stop.
func serveLoopback(h http.Handler) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String() + "/metrics", func() { _ = srv.Close() }, nil
}

// bigExposition renders a demo replica's text exposition padded with
// unrelated series up to about size bytes: valid series the scaler must
// parse, as a large real service would expose.
func bigExposition(size int) ([]byte, error) {
	render := func(padding int) ([]byte, error) {
		w := demo.New(demo.Config{PaddingSeries: padding})
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", "text/plain")
		w.Handler().ServeHTTP(rec, req)
		return io.ReadAll(rec.Result().Body)
	}
	// The padding's label grows with its index, so the size per series is
	// not constant: correct the count twice.
	n := 1000
	var body []byte
	for range 3 {
		b, err := render(n)
		if err != nil {
			return nil, err
		}
		body = b
		n = int(float64(n) * float64(size) / float64(len(b)))
	}
	return body, nil
}

// item4 has three replicas each serve about 9.5 MB of valid series to one
// scrape trigger, and samples the scaler's RSS meanwhile.
func item4(ctx context.Context, bin, logDir string, r *report, d time.Duration) error {
	fmt.Println("== item 4: three replicas of 9.5 MB ==")
	body, err := bigExposition(9_500_000) // under the 10 MiB default maxResponseBytes
	if err != nil {
		return err
	}
	static := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(body)
	})
	var urls []string
	for range 3 {
		u, stop, err := serveLoopback(static)
		if err != nil {
			return err
		}
		defer stop()
		urls = append(urls, u)
	}
	p, err := startScaler(ctx, bin, "bigscrape", logDir)
	if err != nil {
		return err
	}
	defer p.kill()
	base := observe(ctx, p)
	fmt.Println("  before:", base)
	md := map[string]string{"source": "scrape", "targets": strings.Join(urls, ",")}
	if err := spec(ctx, p.client, "big", "scrape", md); err != nil {
		return err
	}
	peak := 0.0
	answers := &codeCounts{}
	read := &latencies{}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		peak = math.Max(peak, float64(p.rss()))
		start := time.Now()
		_, err := p.client.GetMetrics(ctx, &externalscaler.GetMetricsRequest{ScaledObjectRef: &externalscaler.ScaledObjectRef{Namespace: "big", Name: "scrape", ScalerMetadata: md}})
		read.add(time.Since(start))
		answers.add(err)
		time.Sleep(100 * time.Millisecond)
	}
	after := observe(ctx, p)
	fmt.Println("  during:", after)
	r.add("4", fmt.Sprintf("3 replicas x %.1f MB text, %v at 1s", float64(len(body))/1e6, d), fmt.Sprintf("peak RSS %s (baseline %s), +%s", mib(peak), mib(base.rss), mib(peak-base.rss)))
	r.add("4", "GetMetrics of the big target", fmt.Sprintf("%s; %s", answers, read.summary()))
	r.add("4", "default GetMetrics during", after.reads)
	return nil
}

// item10 runs two scalers on the same scrape target (two demo replicas),
// steps the load, and compares their GetMetrics answers asked at the same
// instants.
func item10(ctx context.Context, bin, logDir string, r *report, step time.Duration) error {
	fmt.Println("== item 10: two scalers, one target ==")
	var urls []string
	var replicas []*demo.Workload
	for range 2 {
		w := demo.New(demo.Config{})
		u, stop, err := serveLoopback(w.Handler())
		if err != nil {
			return err
		}
		defer stop()
		urls, replicas = append(urls, u), append(replicas, w)
	}
	var procs []*scalerProc
	for _, name := range []string{"replica-a", "replica-b"} {
		p, err := startScaler(ctx, bin, name, logDir)
		if err != nil {
			return err
		}
		defer p.kill()
		procs = append(procs, p)
	}
	md := map[string]string{"source": "scrape", "targets": strings.Join(urls, ",")}
	// Started about a second apart, as two pods would be.
	for _, p := range procs {
		if err := spec(ctx, p.client, "agree", "demo", md); err != nil {
			return err
		}
		time.Sleep(1300 * time.Millisecond)
	}
	req := &externalscaler.GetMetricsRequest{ScaledObjectRef: &externalscaler.ScaledObjectRef{Namespace: "agree", Name: "demo", ScalerMetadata: md}}
	// Warm both up past their first samples before the first step.
	time.Sleep(3 * time.Second)
	all, settled := &agreement{}, &agreement{}
	for _, rps := range []float64{20, 90, 40, 150, 10, 70} {
		for _, w := range replicas {
			w.SetLoad(rps)
		}
		stepAt := time.Now()
		for time.Since(stepAt) < step {
			a, b, ok := readBoth(ctx, procs[0], procs[1], req)
			if ok {
				all.add(a, b)
				// Two intervals after the step, both have sampled the new
				// load twice: what differs then is state, not phase.
				if time.Since(stepAt) > 2*time.Second {
					settled.add(a, b)
				}
			}
			time.Sleep(97 * time.Millisecond)
		}
	}
	r.add("10", fmt.Sprintf("scrape: 6 load steps of %v, every pair", step), all.String())
	r.add("10", "scrape: pairs 2 s or more after a step", settled.String())
	return nil
}

// agreement compares paired answers of two scalers.
type agreement struct {
	pairs, differ  int
	maxAbs, maxRel float64
}

func (g *agreement) add(a, b float64) {
	g.pairs++
	abs := math.Abs(a - b)
	if abs > 0 {
		g.differ++
	}
	g.maxAbs = math.Max(g.maxAbs, abs)
	if m := math.Max(math.Abs(a), math.Abs(b)); m > 0 {
		g.maxRel = math.Max(g.maxRel, abs/m)
	}
}

func (g *agreement) String() string {
	return fmt.Sprintf("%d pairs, %d differ, max |a-b| %.4g, max relative %.1f%%", g.pairs, g.differ, g.maxAbs, 100*g.maxRel)
}

// readBoth asks both scalers at once and returns their values.
func readBoth(ctx context.Context, a, b *scalerProc, req *externalscaler.GetMetricsRequest) (float64, float64, bool) {
	var va, vb float64
	var ea, eb error
	var wg sync.WaitGroup
	read := func(p *scalerProc, v *float64, e *error) {
		wg.Go(func() {
			resp, err := p.client.GetMetrics(ctx, req)
			if err != nil {
				*e = err
				return
			}
			*v = resp.GetMetricValues()[0].GetMetricValueFloat()
		})
	}
	read(a, &va, &ea)
	read(b, &vb, &eb)
	wg.Wait()
	return va, vb, ea == nil && eb == nil
}
