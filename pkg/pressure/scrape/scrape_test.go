package scrape

import (
	"context"
	"errors"
	"math"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestLoopbackReplicas is the scrape source's hard case: three demo replicas at
// different loads, one that hangs, one that returns garbage and one that
// returns 50 MB. The signal follows the worst replica, the bad ones are named
// and left out, no sample outlives its budget, and no goroutine is left
// behind.
func TestLoopbackReplicas(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Run("sample", func(t *testing.T) {
		clk := newClock()
		cfg := demo.Config{Now: clk.Now}
		low, mid, hot := startDemo(t, 10, cfg), startDemo(t, 50, cfg), startDemo(t, 90, cfg)
		hang := hanging(t)
		junk := garbage(t, "text/html", "<html><body>502 Bad Gateway</body></html>\n")
		big := huge(t, 50<<20)

		// The scrape timeout is generous, so that a loopback replica on a
		// loaded machine always answers within it; the hanging one costs
		// it once per sample.
		const timeout = 2 * time.Second
		src := newSource(t, Options{
			Targets:          targets(t, low.url(), mid.url(), hot.url(), hang.URL+"/metrics", junk.URL+"/metrics", big.URL+"/metrics"),
			Timeout:          timeout,
			MaxResponseBytes: 1 << 20,
			Now:              clk.Now,
		})
		collect := pressure.ComputeCollector{ActivationWorkingSetTarget: pressure.DefaultActivationWorkingSetTarget}

		observe := func() pressure.Observation {
			t.Helper()
			// The sample's budget, three scrape timeouts: a hanging replica
			// costs its timeout, never the whole budget.
			ctx, cancel := context.WithTimeout(context.Background(), 3*timeout)
			defer cancel()
			obs, err := src.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Errorf("the sample ran to its %s budget with a %s scrape timeout", 3*timeout, timeout)
			}
			return obs
		}

		obs := observe()
		if len(obs.Replicas) != 3 || len(obs.Missing) != 3 {
			t.Fatalf("replicas %d, missing %d: %+v", len(obs.Replicas), len(obs.Missing), obs.Missing)
		}
		missing := map[string]string{}
		for _, m := range obs.Missing {
			missing[m.Name] = m.Err.Error()
		}
		for name, err := range missing {
			t.Logf("missing %s: %s", name, err)
		}
		missingErr(t, missing, hang.URL+"/metrics", "timed out")
		missingErr(t, missing, junk.URL+"/metrics", "none of the exposition contract's metrics")
		missingErr(t, missing, big.URL+"/metrics", "exceeds the size limit")

		// First sight: no CPU rate, so resource is memory only.
		cp := collect.Collect(obs)
		hotMem := (64<<20 + 72000*4096.0) / (512 << 20)
		if cp.ReplicaCount != 3 || !near(cp.Activation, 0.72) || !near(cp.Resource, hotMem) ||
			cp.WalSaturation != pressure.Throttled || !near(cp.WalDispatch, 0.5) {
			t.Fatalf("first sample: %+v", cp)
		}
		for _, r := range obs.Replicas {
			if r.CPUUtilisation != 0 {
				t.Errorf("%s: CPU %v on first sight", r.Name, r.CPUUtilisation)
			}
		}

		// One second later CPU has a rate: the hot replica's 0.9 of its core.
		clk.Advance(time.Second)
		obs = observe()
		cp = collect.Collect(obs)
		if !near(cp.Resource, 0.9) {
			t.Errorf("second sample resource %v, want 0.9 (CPU)", cp.Resource)
		}
		if h, _ := cp.Hottest(); h.Name != hot.url() {
			t.Errorf("hottest %+v, want %s", h, hot.url())
		}
		if got := cp.Replicas[0].Name; got > cp.Replicas[1].Name {
			t.Errorf("replicas not sorted: %v", cp.Replicas)
		}

		// Push the mid replica past capacity: it becomes the worst.
		mid.SetLoad(120)
		clk.Advance(time.Second)
		cp = collect.Collect(observe())
		if cp.WalSaturation != pressure.Saturated || !near(cp.Activation, 0.96) || !near(cp.Resource, 1) {
			t.Errorf("after overload: %+v", cp)
		}

		// Folded by the computer, the Reason names the replicas left out.
		sig := signal.NewComputer(signal.DefaultOptions()).Compute(clk.Now(), signal.Input{Compute: collect.Collect(observe())})
		if !strings.Contains(sig.Reason, "no answer from") || !strings.Contains(sig.Reason, hang.URL) {
			t.Errorf("reason %q", sig.Reason)
		}

		counts := src.ErrorCounts()
		if counts[hang.URL+"/metrics"] != 4 || counts[low.url()] != 0 || len(counts) != 6 {
			t.Errorf("error counts %v", counts)
		}
		if err := src.Close(); err != nil {
			t.Fatal(err)
		}
	})
	settleGoroutines(t, base)
}

// TestSampleDeadlineBoundsEverything: hung replicas, a scrape timeout longer
// than the sample's budget, and fewer workers than replicas. The sample
// still ends at the budget, naming every replica.
func TestSampleDeadlineBoundsEverything(t *testing.T) {
	var urls []string
	for range 6 {
		urls = append(urls, hanging(t).URL)
	}
	src := newSource(t, Options{Targets: targets(t, urls...), Timeout: 10 * time.Second, Concurrency: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := src.Observe(ctx)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Observe took %s with a 300ms budget", d)
	}
	if err == nil || !strings.Contains(err.Error(), "none of 6 replicas answered") {
		t.Fatalf("err %v", err)
	}
	for _, u := range urls {
		if !strings.Contains(err.Error(), u) {
			t.Errorf("error does not name %s", u)
		}
	}
	if !strings.Contains(err.Error(), "not scraped before the sample deadline") {
		t.Errorf("queued replicas not explained: %v", err)
	}
}

func TestConcurrencyBound(t *testing.T) {
	var inFlight, peak atomic.Int64
	w := demo.New(demo.Config{})
	h := w.Handler()
	slow := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		inFlight.Add(-1)
		h.ServeHTTP(rw, r)
	})
	var urls []string
	for range 8 {
		srv := startOn(t, "127.0.0.1:0", slow)
		urls = append(urls, srv.URL)
	}
	src := newSource(t, Options{Targets: targets(t, urls...), Concurrency: 3})
	obs, err := src.Observe(context.Background())
	if err != nil || len(obs.Replicas) != 8 {
		t.Fatalf("%v, %d replicas", err, len(obs.Replicas))
	}
	if p := peak.Load(); p > 3 {
		t.Errorf("peak %d scrapes in flight, bound 3", p)
	}
}

func TestNoneAnswer(t *testing.T) {
	junk := garbage(t, "text/plain", "not metrics at all\n")
	src := newSource(t, Options{Targets: targets(t, junk.URL, "http://127.0.0.1:1/metrics")})
	obs, err := src.Observe(context.Background())
	if err == nil || len(obs.Replicas) != 0 {
		t.Fatalf("obs %+v err %v", obs, err)
	}
	for _, want := range []string{"none of 2 replicas answered", junk.URL, "127.0.0.1:1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if src.ErrorCounts()[junk.URL+"/metrics"] != 1 {
		t.Errorf("counts %v", src.ErrorCounts())
	}
}

func TestCanceledContext(t *testing.T) {
	src := newSource(t, Options{Targets: targets(t, "http://127.0.0.1:1/")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Observe(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

func TestHTTPStatusAndRedirect(t *testing.T) {
	good := startDemo(t, 10, demo.Config{})
	notFound := static(t, "")
	redirect := startOn(t, "127.0.0.1:0", http.RedirectHandler(good.url(), http.StatusFound))
	notFound.Config.Handler = http.NotFoundHandler()
	src := newSource(t, Options{Targets: targets(t, good.url(), notFound.URL, redirect.URL)})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	missing := map[string]string{}
	for _, m := range obs.Missing {
		missing[m.Name] = m.Err.Error()
	}
	missingErr(t, missing, notFound.URL+"/metrics", "404")
	missingErr(t, missing, redirect.URL+"/metrics", "302")
}
