package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// codeCounts counts calls by their status code.
type codeCounts struct {
	mu sync.Mutex
	n  map[codes.Code]int
}

func (c *codeCounts) add(err error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[codes.Code]int{}
	}
	c.n[status.Code(err)]++
	c.mu.Unlock()
}

func (c *codeCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, code := range []codes.Code{codes.OK, codes.InvalidArgument, codes.ResourceExhausted, codes.Unavailable} {
		if c.n[code] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", code, c.n[code]))
		}
	}
	for code, n := range c.n {
		if code != codes.OK && code != codes.InvalidArgument && code != codes.ResourceExhausted && code != codes.Unavailable {
			parts = append(parts, fmt.Sprintf("%s %d", code, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func spec(ctx context.Context, c externalscaler.ExternalScalerClient, ns, name string, md map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := c.GetMetricSpec(ctx, &externalscaler.ScaledObjectRef{Namespace: ns, Name: name, ScalerMetadata: md})
	return err
}

// item1 sends long names (refused) and many short valid names on the
// default target (kept up to the per-target cap).
func item1(ctx context.Context, p *scalerProc, r *report, longNames, shortNames int) {
	fmt.Println("== item 1: ScaledObject names ==")
	long := &codeCounts{}
	name := strings.Repeat("a", 1<<20)
	for i := range longNames {
		long.add(spec(ctx, p.client, "names", fmt.Sprintf("%d%s", i, name[:len(name)-8]), nil))
	}
	r.add("1", fmt.Sprintf("GetMetricSpec, %d distinct 1 MiB names", longNames), long.String())
	short := &codeCounts{}
	for i := range shortNames {
		short.add(spec(ctx, p.client, "names", fmt.Sprintf("so-%d", i), nil))
	}
	r.add("1", fmt.Sprintf("GetMetricSpec, %d distinct short names, default target", shortNames), short.String())
	r.add("1", "ScaledObjects the default target keeps", fmt.Sprint(defaultRefs(ctx, p)))
	fmt.Println("  after:", observe(ctx, p))
}

// defaultRefs counts the ScaledObjects /targets lists on the default
// target.
func defaultRefs(ctx context.Context, p *scalerProc) int {
	for _, t := range listTargets(ctx, p) {
		if t.Default {
			return len(t.ScaledObjects)
		}
	}
	return -1
}

type targetInfo struct {
	Default       bool              `json:"default"`
	ScaledObjects []json.RawMessage `json:"scaledObjects"`
}

func listTargets(ctx context.Context, p *scalerProc) []targetInfo {
	_, body := p.get(ctx, "/targets")
	var ts []targetInfo
	if err := json.Unmarshal(body, &ts); err != nil {
		var wrapped struct {
			Targets []targetInfo `json:"targets"`
		}
		_ = json.Unmarshal(body, &wrapped)
		ts = wrapped.Targets
	}
	return ts
}

// item2 floods targets by varying sampleInterval: first one namespace past
// its cap, then many namespaces past the scaler's. The intervals are over
// 5 minutes, so each flood target samples once and then idles: the flood
// costs what the targets hold, not CPU.
func item2(ctx context.Context, p *scalerProc, r *report, namespaces, perNamespace int) {
	fmt.Println("== item 2: target flood ==")
	var ok, perNS, global, other int
	start := time.Now()
	for ns := range namespaces {
		for i := range perNamespace {
			md := map[string]string{"source": "host", "sampleInterval": fmt.Sprintf("%dms", 300000+ns*1000+i)}
			err := spec(ctx, p.client, fmt.Sprintf("flood-%d", ns), fmt.Sprintf("so-%d", i), md)
			switch {
			case err == nil:
				ok++
			case status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "NAMESPACE"):
				perNS++
			case status.Code(err) == codes.ResourceExhausted:
				global++
			default:
				other++
			}
		}
	}
	r.add("2", fmt.Sprintf("flood: %d namespaces x %d intervals", namespaces, perNamespace),
		fmt.Sprintf("OK %d, ResourceExhausted per-namespace %d, global %d, other %d, in %v", ok, perNS, global, other, time.Since(start).Round(time.Millisecond)))
	r.add("2", "targets running after the flood", fmt.Sprint(len(listTargets(ctx, p))))
	fmt.Println("  during:", observe(ctx, p))
}

// item3 times a default-target GetMetrics while /targets and /metrics
// are fetched: back to back (a loop each, which on two cores leaves the
// read only what the listings' CPU leaves it), then once a second each, as
// a Prometheus and an operator would.
func item3(ctx context.Context, p *scalerProc, r *report, d time.Duration) {
	fmt.Println("== item 3: listings while reading ==")
	n := len(listTargets(ctx, p))
	for _, pace := range []time.Duration{0, time.Second} {
		what := "back to back"
		if pace > 0 {
			what = "each every " + pace.String()
		}
		lists, reads, failed := listWhileReading(ctx, p, d, pace)
		r.add("3", fmt.Sprintf("GET /targets (%d targets), %s, %v", n, what, d), lists["/targets"].summary())
		r.add("3", "GET /metrics, "+what, lists["/metrics"].summary())
		r.add("3", "concurrent default GetMetrics, "+what, fmt.Sprintf("%s, errors %d", reads.summary(), failed))
	}
}

// listWhileReading fetches /targets and /metrics in a loop each, pace
// apart, while timing default-target reads 5 ms apart, for d.
func listWhileReading(ctx context.Context, p *scalerProc, d, pace time.Duration) (map[string]*latencies, *latencies, int64) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	lists := map[string]*latencies{"/targets": {}, "/metrics": {}}
	for path, l := range lists {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				if code, _ := p.get(ctx, path); code == 200 {
					l.add(time.Since(start))
				}
				sleep(ctx, pace-time.Since(start))
			}
		})
	}
	reads := &latencies{}
	var failed atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			start := time.Now()
			if _, err := p.client.GetMetrics(ctx, defaultRead("probe")); err != nil {
				if ctx.Err() == nil {
					failed.Add(1)
				}
				continue
			}
			reads.add(time.Since(start))
			sleep(ctx, 5*time.Millisecond)
		}
	})
	wg.Wait()
	return lists, reads, failed.Load()
}

// sleep waits d (nothing when d <= 0) or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// within reports whether v is within 10 % of base.
func within(v, base float64) bool { return math.Abs(v-base) <= 0.1*base }

// afterIdle waits, up to max, for the flood to be reaped and goroutines
// and heap to come back within 10 % of base.
func afterIdle(ctx context.Context, p *scalerProc, r *report, base observation, max time.Duration) {
	fmt.Println("== after the idle timeout ==")
	start := time.Now()
	var o observation
	for {
		o = observe(ctx, p)
		n := len(listTargets(ctx, p))
		fmt.Printf("  +%v: %d targets, %s\n", time.Since(start).Round(time.Second), n, o)
		if n == 1 && within(o.goroutines, base.goroutines) && within(o.heap, base.heap) || time.Since(start) > max {
			break
		}
		time.Sleep(10 * time.Second)
	}
	r.add("1,2", "targets / default-target ScaledObjects after idle", fmt.Sprintf("%d / %d, %v after the flood", len(listTargets(ctx, p)), defaultRefs(ctx, p), time.Since(start).Round(time.Second)))
	r.add("1,2", "goroutines after idle vs baseline", fmt.Sprintf("%.0f vs %.0f (within 10%%: %v)", o.goroutines, base.goroutines, within(o.goroutines, base.goroutines)))
	r.add("1,2", "live heap after idle vs baseline", fmt.Sprintf("%s vs %s (within 10%%: %v)", mib(o.heap), mib(base.heap), within(o.heap, base.heap)))
	r.add("1,2", "heap in use after idle vs baseline", fmt.Sprintf("%s vs %s", mib(o.inuse), mib(base.inuse)))
	r.add("1,2", "RSS after idle vs baseline", fmt.Sprintf("%s vs %s", mib(o.rss), mib(base.rss)))
}
