package registry_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// contentionTargets is the fleet the contention is measured at: 10,000
// targets listed, walked and reaped while a read is timed.
const contentionTargets = 10000

// churn is a registry holding many targets and one hot ScaledObject that a
// reader resolves, while other goroutines list, walk and reap the rest.
type churn struct {
	reg   *registry.Registry
	clock *samplingtest.FakeClock
	hot   registry.Ref
	raw   map[string]string
	n     int
}

func newChurn(t testing.TB, n int) *churn {
	t.Helper()
	clock := samplingtest.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	// One script for every name: a target costs a goroutine and nothing
	// else, and the fake clock's tickers never fire, so each samples once.
	script := registrytest.Returning(pressure.Observation{})
	reg := registrytest.NewRegistry(t, registry.Config{
		Schema:      trigger.NewSchema(registrytest.Kind("scripted", "hot", func(string) *registrytest.Script { return script })),
		IdleTimeout: time.Minute, Clock: clock, MaxBindings: 4 * n,
		Limits: registry.Limits{Targets: n + 1, TargetsPerNamespace: n + 1, RefsPerTarget: 2},
	})
	c := &churn{reg: reg, clock: clock, hot: registry.Ref{Namespace: "hot", Name: "reader"},
		raw: map[string]string{"source": "scripted", "sampleInterval": "10m"}, n: n}
	tg, _, err := reg.Resolve(c.hot, c.raw)
	if err != nil {
		t.Fatal(err)
	}
	// A held target is never reaped, nor its binding forgotten: the reader
	// keeps hitting the cache however far the clock jumps.
	t.Cleanup(reg.Hold(tg))
	return c
}

// populate starts c.n targets, one per ScaledObject.
func (c *churn) populate() error {
	for i := range c.n {
		ref := registry.Ref{Namespace: fmt.Sprint("ns", i%100), Name: fmt.Sprint("so", i)}
		raw := map[string]string{"source": "scripted", "script": fmt.Sprint("t", i), "sampleInterval": "10m"}
		if _, _, err := c.reg.Resolve(ref, raw); err != nil {
			return err
		}
	}
	return nil
}

// reap idles every target but the hot one and stops them.
func (c *churn) reap() int {
	c.clock.Advance(2 * time.Minute)
	return c.reg.ReapIdle()
}

// read is one Resolve and Load of the hot ScaledObject, as GetMetrics does.
func (c *churn) read(t testing.TB) time.Duration {
	start := time.Now()
	tg, _, err := c.reg.Resolve(c.hot, c.raw)
	if err != nil {
		t.Error(err)
		return 0
	}
	_ = tg.Load()
	return time.Since(start)
}

// hammer lists and walks the registry from two goroutines, and populates
// and reaps it from a third, until stop closes; reaps counts the reaps
// that stopped every target so far, and wait returns it once every
// goroutine has returned.
func (c *churn) hammer(t testing.TB, stop <-chan struct{}) (reaps func() int, wait func() int) {
	var wg sync.WaitGroup
	var reaped atomic.Int64
	loop := func(fn func() error) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := fn(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	loop(func() error { _ = c.reg.List(); return nil })
	loop(func() error { _ = c.reg.Targets(); return nil })
	loop(func() error {
		if err := c.populate(); err != nil {
			return err
		}
		if c.reap() >= c.n {
			reaped.Add(1)
		}
		return nil
	})
	return func() int { return int(reaped.Load()) }, func() int {
		wg.Wait()
		return int(reaped.Load())
	}
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// Reads never wait on the registry: with 10,000 targets (2,000 under the
// race detector) listed, walked, created and reaped around it, cached
// Resolves go on. That a cached Resolve takes no lock those hold for O(n)
// work is TestCachedResolveTakesNoRegistryLock's to show, exactly; timing
// on a shared machine is noisy, so this test logs the reads' p50, p99 and
// worst and fails only when nothing was measured against a reap;
// BenchmarkReadUnderChurn reports the figure.
func TestReadsNeverWaitOnTheRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 10,000 samplers several times")
	}
	c := newChurn(t, testTargets)
	stop := make(chan struct{})
	reaped, wait := c.hammer(t, stop)
	var lat []time.Duration
	// At least 8 s, and at least one reap of every target (bounded: a
	// machine too loaded to reap within a minute fails below).
	start := time.Now()
	for d := time.Since(start); d < 8*time.Second || reaped() == 0 && d < time.Minute; d = time.Since(start) {
		lat = append(lat, c.read(t))
		if len(lat)%64 == 0 {
			time.Sleep(100 * time.Microsecond) // leave the hammers a core
		}
	}
	close(stop)
	reaps := wait()
	if reaps == 0 {
		t.Fatal("no reap of every target within the run: nothing was measured against it")
	}
	t.Logf("%d reads over %d reaps of %d targets: p50 %v, p99 %v, max %v",
		len(lat), reaps, c.n, quantile(lat, 0.5), quantile(lat, 0.99), slices.Max(lat))
}

// BenchmarkReadUnderChurn times the hot read while 10,000 targets are
// listed, walked, created and reaped; it reports the reads' p99 and max.
func BenchmarkReadUnderChurn(b *testing.B) {
	c := newChurn(b, contentionTargets)
	if err := c.populate(); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	_, wait := c.hammer(b, stop)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		lat = append(lat, c.read(b))
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(wait()), "reaps")
	b.ReportMetric(float64(quantile(lat, 0.99).Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(slices.Max(lat).Nanoseconds()), "max-ns")
}
