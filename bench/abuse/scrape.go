package main

import (
	"context"
	"encoding/json"
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
	// That the replicas were read whole, not refused: the scaler's own
	// account of the last sample.
	for _, m := range []string{"barometer_observed_replicas", "barometer_last_sample_duration_seconds", "barometer_samples_total", "barometer_sample_failures_total"} {
		for _, line := range p.series(ctx, m, "scrape") {
			r.add("4", "scaler's "+m, line[strings.LastIndex(line, " ")+1:])
		}
	}
	r.add("4", fmt.Sprintf("3 replicas x %.1f MB text, %v at 1s", float64(len(body))/1e6, d), fmt.Sprintf("peak RSS %s (baseline %s), +%s", mib(peak), mib(base.rss), mib(peak-base.rss)))
	r.add("4", "GetMetrics of the big target", fmt.Sprintf("%s; %s", answers, read.summary()))
	r.add("4", "default GetMetrics during", after.reads)
	return nil
}

// item10 runs two scalers on the same target (two demo replicas), read
// by scrape and through a real Prometheus, steps the load, and compares
// their GetMetrics answers asked at the same instants.
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
	sources := map[string]map[string]string{"scrape": {"source": "scrape", "targets": strings.Join(urls, ",")}}
	if prom, stop, err := startPrometheus(ctx, logDir, urls); err != nil {
		r.add("10", "prometheus", "not run: "+err.Error())
	} else {
		defer stop()
		sources["prometheus"] = map[string]string{"source": "prometheus", "serverAddress": "http://" + prom}
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
	// Started about a second apart, as two pods would be.
	for _, p := range procs {
		for name, md := range sources {
			if err := spec(ctx, p.client, "agree", name, md); err != nil {
				return err
			}
		}
		time.Sleep(1300 * time.Millisecond)
	}
	// Let both sample a few times (Prometheus needs two scrapes for a
	// rate) before the first step.
	time.Sleep(5 * time.Second)
	for name, md := range sources {
		req := &externalscaler.GetMetricsRequest{ScaledObjectRef: &externalscaler.ScaledObjectRef{Namespace: "agree", Name: name, ScalerMetadata: md}}
		all, settled, same, failed := compareReplicas(ctx, procs[0], procs[1], req, replicas, step)
		r.add("10", fmt.Sprintf("%s: 6 load steps of %v, every pair", name, step), fmt.Sprintf("%s; failed reads %d", all, failed))
		r.add("10", name+": pairs 2 s or more after a step", settled.String())
		r.add("10", name+": pairs of the same sample (/scale, equal sampledAt)", same.String())
	}
	return nil
}

// compareReplicas steps the replicas' load and reads a and b at once about
// ten times a second. A pair read at once can still straddle a sample (one
// replica has published the instant's sample, the other is still asking
// its source), so same compares, from /scale, only the pairs whose signals
// were sampled at the same instant: what two replicas that have folded the
// same data answer.
func compareReplicas(ctx context.Context, a, b *scalerProc, req *externalscaler.GetMetricsRequest, replicas []*demo.Workload, step time.Duration) (all, settled, same *agreement, failed int) {
	all, settled, same = &agreement{}, &agreement{}, &agreement{}
	ref := req.GetScaledObjectRef()
	path := "/scale/" + ref.GetNamespace() + "/" + ref.GetName()
	for _, rps := range []float64{20, 90, 40, 150, 10, 70} {
		for _, w := range replicas {
			w.SetLoad(rps)
		}
		stepAt := time.Now()
		for time.Since(stepAt) < step {
			va, vb, ok := readBoth(ctx, a, b, req)
			switch {
			case !ok:
				failed++
			default:
				all.add(va, vb)
				// Two intervals after the step, both have sampled the new
				// load twice: what differs then is state, not phase.
				if time.Since(stepAt) > 2*time.Second {
					settled.add(va, vb)
				}
			}
			if sa, sb, ok := scaleBoth(ctx, a, b, path); ok && sa.SampledAt != nil && sb.SampledAt != nil && sa.SampledAt.Equal(*sb.SampledAt) {
				same.add(sa.ScaleValue, sb.ScaleValue)
			}
			time.Sleep(97 * time.Millisecond)
		}
	}
	return all, settled, same, failed
}

// scaled is the part of /scale the comparison reads.
type scaled struct {
	ScaleValue float64    `json:"scaleValue"`
	SampledAt  *time.Time `json:"sampledAt"`
}

// scaleBoth reads path from both scalers at once.
func scaleBoth(ctx context.Context, a, b *scalerProc, path string) (scaled, scaled, bool) {
	var out [2]scaled
	var ok [2]bool
	var wg sync.WaitGroup
	for i, p := range []*scalerProc{a, b} {
		wg.Go(func() {
			code, body := p.get(ctx, path)
			ok[i] = code == 200 && json.Unmarshal(body, &out[i]) == nil
		})
	}
	wg.Wait()
	return out[0], out[1], ok[0] && ok[1]
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
