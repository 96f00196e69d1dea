// Command abuse tries the scaler as a hostile or careless caller would (see
// bench/README.md for the cases) against the real
// scaler binary on loopback, with bounded counts and time, using KEDA's
// generated client, and prints RSS, goroutines and read latency before,
// during and after each phase, then a summary. Run it from the repository
// root: go run ./bench/abuse (see bench/README.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/barometer-scaler/barometer/pkg/registry"
)

// options are the bounds of one run.
type options struct {
	longNames, shortNames    int
	floodNamespaces, floodNS int
	listFor                  time.Duration
	idleMax                  time.Duration
	callers, streams         int
	loadFor                  time.Duration
	bigFor, agreeStep        time.Duration
	shutdownDelay            time.Duration
	keep, loadOnly           bool
	targets                  string
	targetInterval, readFor  time.Duration
	memoryLimit              string
	otlp                     bool
	otlpRounds               int
}

func parseFlags() options {
	var o options
	flag.IntVar(&o.longNames, "long-names", 50, "item 1: GetMetricSpec calls with distinct 1 MiB names")
	flag.IntVar(&o.shortNames, "short-names", 1500, "item 1: distinct short names on the default target")
	flag.IntVar(&o.floodNamespaces, "flood-namespaces", 12, "item 2: namespaces flooding targets")
	flag.IntVar(&o.floodNS, "flood-per-namespace", 120, "item 2: distinct sampleIntervals per namespace")
	flag.DurationVar(&o.listFor, "list-for", 15*time.Second, "item 3: how long /targets and /metrics are hammered")
	flag.DurationVar(&o.idleMax, "idle-max", 4*time.Minute, "how long to wait for the flood to be released")
	flag.IntVar(&o.callers, "callers", 2000, "load: concurrent GetMetrics callers")
	flag.IntVar(&o.streams, "streams", 1000, "load: StreamIsActive streams")
	flag.DurationVar(&o.loadFor, "load-for", 60*time.Second, "load: duration (shorten for a quick run)")
	flag.DurationVar(&o.bigFor, "big-for", 12*time.Second, "item 4: how long the big replicas are sampled")
	flag.DurationVar(&o.agreeStep, "agree-step", 5*time.Second, "item 10: how long each load step holds")
	flag.DurationVar(&o.shutdownDelay, "shutdown-delay", 5*time.Second, "item 5: BAROMETER_SHUTDOWN_DELAY")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (binary and scaler logs)")
	flag.BoolVar(&o.loadOnly, "load-only", false, "skip items 1 to 3 and the idle wait: the load test and items 4, 5 and 10 only")
	flag.StringVar(&o.targets, "targets", "", "only the targets measurement: host targets started in these ascending steps (e.g. 10,10000)")
	flag.DurationVar(&o.targetInterval, "target-interval", 30*time.Second, "targets: each target's sampleInterval (plus 1 ms per target)")
	flag.DurationVar(&o.readFor, "read-for", 10*time.Second, "targets: how long GetMetrics is timed at each step")
	flag.StringVar(&o.memoryLimit, "gomemlimit", "", "targets, otlp: the scaler's GOMEMLIMIT (e.g. 255MiB, what it sets itself in a 300 MiB container); empty: the runtime's default")
	flag.BoolVar(&o.otlp, "otlp", false, "only the OTLP receiver's memory: peak RSS while 4 clients push each kind of hostile or largest push at once")
	flag.IntVar(&o.otlpRounds, "otlp-rounds", 5, "otlp: how many times the 4 clients push each kind")
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	// Everything the suite starts is its child and ends with it; a hard
	// bound stops a run that hangs.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 20*time.Minute)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "barometer-abuse-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("work directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	bin, err := buildScaler(ctx, dir)
	if err != nil {
		return err
	}
	r := &report{}
	if o.otlp {
		if err := otlpRun(ctx, bin, dir, r, o.memoryLimit, o.otlpRounds); err != nil {
			return fmt.Errorf("otlp: %w", err)
		}
		fmt.Print(r)
		return nil
	}
	if o.targets != "" {
		steps, err := parseSteps(o.targets)
		if err != nil {
			return err
		}
		if err := targetsRun(ctx, bin, dir, r, steps, o.targetInterval, o.readFor, o.memoryLimit); err != nil {
			return fmt.Errorf("targets: %w", err)
		}
		fmt.Print(r)
		return nil
	}
	if err := abuse(ctx, bin, dir, r, o); err != nil {
		return err
	}
	if err := item4(ctx, bin, dir, r, o.bigFor); err != nil {
		return fmt.Errorf("item 4: %w", err)
	}
	if err := item5(ctx, bin, dir, r, o.shutdownDelay); err != nil {
		return fmt.Errorf("item 5: %w", err)
	}
	if err := item10(ctx, bin, dir, r, o.agreeStep); err != nil {
		return fmt.Errorf("item 10: %w", err)
	}
	fmt.Print(r)
	return nil
}

// abuse runs items 1 to 3, the release after the idle timeout and the load
// test on one scaler, against its own baseline.
func abuse(ctx context.Context, bin, dir string, r *report, o options) error {
	p, err := startScaler(ctx, bin, "abuse", dir)
	if err != nil {
		return err
	}
	defer p.kill()
	// The first reads wait for the default target's first sample.
	timeReads(ctx, p.client, 5)
	// Every path the flood takes runs once before the baseline, so the
	// comparison after it measures what the flood left, not what a first
	// call builds once for good (JSON encoders, protobuf reflection, the
	// error paths, the runtime's goroutine descriptors).
	listTargets(ctx, p)
	_ = spec(ctx, p.client, "warm", strings.Repeat("x", 300), nil)
	if !o.loadOnly {
		// The flood runs one sampler goroutine per target, at most the
		// default BAROMETER_MAX_TARGETS.
		if err := warmGoroutines(ctx, p, registry.DefaultMaxTargets+50); err != nil {
			return err
		}
	}
	time.Sleep(2 * time.Second)
	// The live heap is what the last GC marked: wait for two GCs after the
	// warm-up (the first may have begun during it), so the baseline holds
	// none of its garbage. An idle process collects at the runtime's forced
	// GC, within 2 minutes; reading /metrics every second allocates enough
	// to bring one sooner.
	warm := p.gauges(ctx, "go_gc_duration_seconds_count")["go_gc_duration_seconds_count"]
	for deadline := time.Now().Add(150 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if p.gauges(ctx, "go_gc_duration_seconds_count")["go_gc_duration_seconds_count"] >= warm+2 {
			break
		}
	}
	base := observe(ctx, p)
	fmt.Println("baseline:", base)
	r.add("base", "RSS / goroutines / live heap", fmt.Sprintf("%s / %.0f / %s", mib(base.rss), base.goroutines, mib(base.heap)))
	r.add("base", "default GetMetrics", base.reads)
	if !o.loadOnly {
		item1(ctx, p, r, o.longNames, o.shortNames)
		item2(ctx, p, r, o.floodNamespaces, o.floodNS)
		during := observe(ctx, p)
		r.add("2", "during: RSS / goroutines / live heap", fmt.Sprintf("%s / %.0f / %s", mib(during.rss), during.goroutines, mib(during.heap)))
		item3(ctx, p, r, o.listFor)
		afterIdle(ctx, p, r, base, o.idleMax)
	}
	return loadTest(ctx, p, r, base, o.callers, o.streams, o.loadFor)
}
