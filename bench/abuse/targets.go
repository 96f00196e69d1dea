package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
)

// targetsRun is the -targets mode: one scaler with BAROMETER_MAX_TARGETS
// raised to the last step, host targets started step by step (10, then
// 10,000 by default), and at each step what the process holds (RSS, live
// heap, stacks, goroutines), the CPU it spends and the latency of
// GetMetrics spread over every target started. Each target is one
// ScaledObject whose trigger reads the host at its own interval (interval
// plus i ms: a distinct interval is a distinct target), so the targets
// sample at instants spread over the interval, as unrelated ScaledObjects
// do.
//
// memoryLimit, when set, is the scaler's GOMEMLIMIT: on a host without a
// cgroup v2 memory limit, what the scaler would set itself in a container
// (85 % of its limit).
func targetsRun(ctx context.Context, bin, dir string, r *report, steps []int, interval, readFor time.Duration, memoryLimit string) error {
	most := steps[len(steps)-1]
	env := []string{
		fmt.Sprintf("BAROMETER_MAX_TARGETS=%d", most+10),
		fmt.Sprintf("BAROMETER_MAX_TARGETS_PER_NAMESPACE=%d", most+10),
		// Longer than the run: nothing is reaped while it is measured.
		"BAROMETER_IDLE_TIMEOUT=1h",
	}
	if memoryLimit != "" {
		env = append(env, "GOMEMLIMIT="+memoryLimit)
		fmt.Println("scaler GOMEMLIMIT:", memoryLimit)
	}
	p, err := startScaler(ctx, bin, "targets", dir, env...)
	if err != nil {
		return err
	}
	defer p.kill()
	timeReads(ctx, p.client, 5)
	clients, closeAll, err := openClients(p, 8)
	if err != nil {
		return err
	}
	defer closeAll()
	started := 0
	for _, n := range steps {
		fmt.Printf("== %d host targets, sampled every %v (+1 ms each) ==\n", n, interval)
		begin := time.Now()
		if err := startTargets(ctx, clients, started, n, interval); err != nil {
			return err
		}
		started = n
		fmt.Printf("  started in %v\n", time.Since(begin).Round(time.Millisecond))
		// Every target has sampled at least once, and the first samples'
		// garbage is gone from the live heap: two GCs after a settling
		// interval.
		sleep(ctx, interval)
		waitGCs(ctx, p, 2, 150*time.Second)
		g := p.gauges(ctx, "go_goroutines", "go_gc_heap_live_bytes", "go_memstats_heap_inuse_bytes",
			"go_memstats_stack_inuse_bytes", "process_cpu_seconds_total")
		rss := float64(p.rss())
		reads, failed := readTargets(ctx, clients, n, interval, readFor)
		cpu := p.gauges(ctx, "process_cpu_seconds_total")["process_cpu_seconds_total"] - g["process_cpu_seconds_total"]
		r.add(fmt.Sprint(n), "RSS / live heap / heap in use / stacks", fmt.Sprintf("%s / %s / %s / %s",
			mib(rss), mib(g["go_gc_heap_live_bytes"]), mib(g["go_memstats_heap_inuse_bytes"]), mib(g["go_memstats_stack_inuse_bytes"])))
		r.add(fmt.Sprint(n), "goroutines", fmt.Sprintf("%.0f", g["go_goroutines"]))
		r.add(fmt.Sprint(n), fmt.Sprintf("GetMetrics over all targets, 8 callers, %v", readFor), fmt.Sprintf("%s, errors [%s]", reads.summary(), failed))
		r.add(fmt.Sprint(n), "scaler CPU while reading", fmt.Sprintf("%.0f %% of a core", 100*cpu/readFor.Seconds()))
		// Sampling alone, one whole interval after the reads: what the
		// targets cost at rest, the garbage collections included (a
		// GOMEMLIMIT near the live heap makes them more frequent).
		const gcs, cpuSeconds = "go_gc_duration_seconds_count", "process_cpu_seconds_total"
		before := p.gauges(ctx, gcs, cpuSeconds)
		sleep(ctx, interval)
		after := p.gauges(ctx, gcs, cpuSeconds)
		r.add(fmt.Sprint(n), fmt.Sprintf("scaler at rest, one interval (%v)", interval), fmt.Sprintf("%.1f %% of a core, %.0f GCs",
			100*(after[cpuSeconds]-before[cpuSeconds])/interval.Seconds(), after[gcs]-before[gcs]))
	}
	return nil
}

// targetMetadata is target i's trigger: the host, at its own interval.
func targetMetadata(i int, interval time.Duration) (ns, name string, md map[string]string) {
	md = map[string]string{"scalerAddress": "barometer.keda.svc:6000", "source": "host",
		"sampleInterval": (interval + time.Duration(i)*time.Millisecond).String()}
	return fmt.Sprintf("t-%d", i/100), fmt.Sprintf("so-%d", i), md
}

// startTargets starts targets from to to (exclusive) with GetMetricSpec,
// as KEDA does when a ScaledObject appears, from 8 callers at once.
func startTargets(ctx context.Context, clients []externalscaler.ExternalScalerClient, from, to int, interval time.Duration) error {
	var next atomic.Int64
	next.Store(int64(from))
	var failed atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < to && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				ns, name, md := targetMetadata(i, interval)
				if err := spec(ctx, c, ns, name, md); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d targets refused; the first: %v", n, first.Load())
	}
	return ctx.Err()
}

// readTargets calls GetMetrics on the first n targets for d, from one
// caller per client, each walking them from its own start, and times
// every call.
func readTargets(ctx context.Context, clients []externalscaler.ExternalScalerClient, n int, interval, d time.Duration) (*latencies, *codeCounts) {
	// Cancelled, not timed out: a deadline would travel with every call,
	// and the calls of its last instant would fail fast, on the client's
	// side, before the context says it has ended.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	time.AfterFunc(d, cancel)
	reqs := make([]*externalscaler.GetMetricsRequest, n)
	for i := range reqs {
		ns, name, md := targetMetadata(i, interval)
		reqs[i] = &externalscaler.GetMetricsRequest{ScaledObjectRef: &externalscaler.ScaledObjectRef{Namespace: ns, Name: name, ScalerMetadata: md}}
	}
	l := &latencies{}
	failed := &codeCounts{}
	var wg sync.WaitGroup
	for k, c := range clients {
		wg.Go(func() {
			for i := k * 7919; ctx.Err() == nil; i += 7 {
				start := time.Now()
				_, err := c.GetMetrics(ctx, reqs[i%n])
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					failed.add(err)
					continue
				}
				l.add(time.Since(start))
			}
		})
	}
	wg.Wait()
	return l, failed
}

// waitGCs waits, up to max, for n garbage collections; reading /metrics
// each second allocates enough to bring them in an idle process.
func waitGCs(ctx context.Context, p *scalerProc, n float64, max time.Duration) {
	const count = "go_gc_duration_seconds_count"
	from := p.gauges(ctx, count)[count]
	for deadline := time.Now().Add(max); time.Now().Before(deadline) && ctx.Err() == nil; sleep(ctx, time.Second) {
		if p.gauges(ctx, count)[count] >= from+n {
			return
		}
	}
}

// parseSteps reads -targets: ascending target counts, comma-separated.
func parseSteps(s string) ([]int, error) {
	var steps []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || len(steps) > 0 && n <= steps[len(steps)-1] {
			return nil, fmt.Errorf("-targets %q: ascending positive counts, comma-separated", s)
		}
		steps = append(steps, n)
	}
	return steps, nil
}
