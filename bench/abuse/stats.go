package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// latencies collects durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// summary is p50/p99/max of what was collected.
func (l *latencies) summary() string {
	l.mu.Lock()
	s := slices.Clone(l.d)
	l.mu.Unlock()
	if len(s) == 0 {
		return "no reads"
	}
	slices.Sort(s)
	q := func(f float64) time.Duration { return s[int(f*float64(len(s)-1))].Round(10 * time.Microsecond) }
	return fmt.Sprintf("p50 %v p99 %v max %v (n=%d)", q(0.5), q(0.99), s[len(s)-1].Round(10*time.Microsecond), len(s))
}

// defaultRead is a GetMetrics of a ScaledObject on the default target (no
// metadata: the host source at the scaler's interval).
func defaultRead(name string) *externalscaler.GetMetricsRequest {
	return &externalscaler.GetMetricsRequest{ScaledObjectRef: &externalscaler.ScaledObjectRef{Namespace: "probe", Name: name}}
}

// timeReads times n sequential default-target reads.
func timeReads(ctx context.Context, c externalscaler.ExternalScalerClient, n int) *latencies {
	l := &latencies{}
	for range n {
		start := time.Now()
		if _, err := c.GetMetrics(ctx, defaultRead("probe")); err == nil {
			l.add(time.Since(start))
		}
	}
	return l
}

// observation is one look at a scaler: RSS, goroutines, heap, read
// latency. heap is what the last GC marked live, the measure of what is
// kept; heap in use also holds garbage not yet collected, up to GOGC %
// more, so it swings with the moment of the look.
type observation struct {
	rss, goroutines, heap, inuse float64
	reads                        string
}

func observe(ctx context.Context, p *scalerProc) observation {
	g := p.gauges(ctx, "go_goroutines", "go_gc_heap_live_bytes", "go_memstats_heap_inuse_bytes")
	return observation{rss: float64(p.rss()), goroutines: g["go_goroutines"], heap: g["go_gc_heap_live_bytes"],
		inuse: g["go_memstats_heap_inuse_bytes"], reads: timeReads(ctx, p.client, 20).summary()}
}

func (o observation) String() string {
	return fmt.Sprintf("RSS %s, goroutines %.0f, live heap %s (in use %s), default GetMetrics %s",
		mib(o.rss), o.goroutines, mib(o.heap), mib(o.inuse), o.reads)
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// report is the final table: one row per figure.
type report struct {
	rows [][3]string
}

func (r *report) add(item, figure, value string) {
	r.rows = append(r.rows, [3]string{item, figure, value})
	fmt.Printf("  %-8s %-52s %s\n", item, figure, value)
}

func (r *report) String() string {
	var b strings.Builder
	b.WriteString("\n== summary ==\n")
	for _, row := range r.rows {
		fmt.Fprintf(&b, "%-8s %-52s %s\n", row[0], row[1], row[2])
	}
	return b.String()
}
