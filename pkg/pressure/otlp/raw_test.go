package otlp_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// base is a fixed instant a little in the past, so that points timed from
// it are never refused as future.
var base = time.Now().Add(-5 * time.Minute).Truncate(time.Second)

func at(seconds float64) time.Time { return base.Add(time.Duration(seconds * float64(time.Second))) }

// A counter that falls, or whose start time moves (the process
// restarted), is read as Prometheus reads a counter reset: what it had
// counted stays, and the rate over the window counts the new start from 0.
func TestCounterResets(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	c := newRawClient(t, h, tokenA)
	push := func(sec float64, start time.Time, v float64) {
		t.Helper()
		resp, err := c.export(rm("team-a", "shop", "shop-1",
			counter(exposition.CPUSeconds, numberPoint(at(sec), start, v)),
			gauge(exposition.CPULimitCores, numberPoint(at(sec), time.Time{}, 1))))
		if err != nil || resp.GetPartialSuccess() != nil {
			t.Fatalf("push: %v %v", resp, err)
		}
	}
	src := newSource(t, h, "team-a", "shop", func() time.Time { return at(60) }, 5*time.Minute)
	cpu := func() float64 {
		t.Helper()
		obs, err := src.Observe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return obs.Replicas[0].CPUUtilisation
	}
	push(10, time.Time{}, 100) // no start time: no rate from one point
	if got := cpu(); got != 0 {
		t.Fatalf("one point without a start: CPU %v, want 0", got)
	}
	push(20, time.Time{}, 105)
	if got := cpu(); math.Abs(got-0.5) > 1e-9 {
		t.Fatalf("CPU %v, want 5 s over 10 s", got)
	}
	push(30, time.Time{}, 2) // fell: restarted, counted 2 since
	if got := cpu(); math.Abs(got-(5+2)/20.0) > 1e-9 {
		t.Fatalf("after a fall: CPU %v, want (5+2)/20", got)
	}
	push(40, at(35), 1) // fell, and now has a start: one reset
	push(50, at(35), 4)
	reps := h.store.Read(store.Query{Namespace: "team-a", Selector: map[string]string{"k8s.deployment.name": "shop"},
		Metrics: map[string]bool{exposition.CPUSeconds: true}, Window: 10 * time.Second})
	x := reps[0].Series[0]
	// 100 -> 105, restart to 2, restart to 1 -> 4: 105 + 2 + 4 counted.
	if x.Value != 111 || math.Abs(x.Rate-0.3) > 1e-9 {
		t.Fatalf("counter = %v rate %v, want 111 and 3 s over 10 s", x.Value, x.Rate)
	}
	// A start time that moves while the value rises is a restart too.
	push(60, at(55), 10)
	reps = h.store.Read(store.Query{Namespace: "team-a", Selector: map[string]string{"k8s.deployment.name": "shop"},
		Metrics: map[string]bool{exposition.CPUSeconds: true}, Window: 10 * time.Second})
	if x := reps[0].Series[0]; x.Value != 121 {
		t.Fatalf("counter = %v, want 111 + 10 from the new start", x.Value)
	}
}

// Points older than a series' newest, or at the same time, are ignored:
// not stored, not rejected (a retried push repeats what was stored), and
// counted.
func TestOutOfOrderAndDuplicatePoints(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	c := newRawClient(t, h, tokenA)
	send := func(sec, v float64) *metricspb.ResourceMetrics {
		return rm("team-a", "shop", "shop-1", gauge(exposition.Activations, numberPoint(at(sec), time.Time{}, v)),
			counter(exposition.QueueArrivals, numberPoint(at(sec), at(0), v)))
	}
	for _, p := range []struct{ sec, v float64 }{{20, 50}, {10, 999}, {20, 777}, {20, 50}} {
		resp, err := c.export(send(p.sec, p.v))
		if err != nil || resp.GetPartialSuccess() != nil {
			t.Fatalf("push %v: %v %v", p, resp, err)
		}
	}
	obs, err := newSource(t, h, "team-a", "shop", func() time.Time { return at(25) }, time.Minute).Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ws := obs.Replicas[0].WorkingSet; ws != 50 {
		t.Errorf("working set %v, want 50: a late or repeated point overwrote it", ws)
	}
	if q := obs.Queue; q == nil || q.Arrivals != 50 {
		t.Errorf("queue %+v, want 50 arrivals", obs.Queue)
	}
	if !obs.MeasuredAt.Equal(at(20)) {
		t.Errorf("MeasuredAt %v, want %v", obs.MeasuredAt, at(20))
	}
	if got := metricValue(t, h.reg, "barometer_otlp_points_ignored_total", "reason", "out_of_order"); got != 2 {
		t.Errorf("out of order counted %v, want 2", got)
	}
	if got := metricValue(t, h.reg, "barometer_otlp_points_ignored_total", "reason", "duplicate"); got != 4 {
		t.Errorf("duplicates counted %v, want 4", got)
	}
}

// A replica that stopped pushing is left out once its newest point is
// older than maxAge, and named; the sample is as old as the oldest replica
// still counted. When none is left the sample fails.
func TestReplicaThatStopsPushing(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	c := newRawClient(t, h, tokenA)
	for _, p := range []struct {
		pod string
		sec float64
	}{{"shop-1", 10}, {"shop-2", 10}, {"shop-2", 40}} {
		if _, err := c.export(rm("team-a", "shop", p.pod, gauge(exposition.Activations, numberPoint(at(p.sec), time.Time{}, 10)))); err != nil {
			t.Fatal(err)
		}
	}
	now := at(30)
	src := newSource(t, h, "team-a", "shop", func() time.Time { return now }, 25*time.Second)
	obs, err := src.Observe(context.Background())
	if err != nil || len(obs.Replicas) != 2 || !obs.MeasuredAt.Equal(at(10)) {
		t.Fatalf("at 30 s: %+v %v, want both, measured at 10 s", obs, err)
	}
	now = at(45)
	obs, err = src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Replicas) != 1 || obs.Replicas[0].Name != "shop-2" || !obs.MeasuredAt.Equal(at(40)) {
		t.Fatalf("at 45 s: replicas %+v measured %v, want shop-2 at 40 s", obs.Replicas, obs.MeasuredAt)
	}
	if len(obs.Missing) != 1 || obs.Missing[0].Name != "shop-1" || !strings.Contains(obs.Missing[0].Err.Error(), "no push for 35s") {
		t.Fatalf("missing %+v, want shop-1 named with its age", obs.Missing)
	}
	now = at(70)
	if _, err := src.Observe(context.Background()); err == nil || !strings.Contains(err.Error(), "shop-1") {
		t.Fatalf("every replica stale: err %v, want a failed sample naming them", err)
	}
}

// The window is read back from the newest point: a counter pushed every
// second rates over the window, not over the last second, and the
// history's thinning keeps the window covered.
func TestRateOverTheWindow(t *testing.T) {
	h := newHarness(t, store.Options{}, receiver.Config{}, "")
	c := newRawClient(t, h, tokenA)
	// 1 CPU second per second for 60 s, then 3 per second for 10 s.
	v := 0.0
	for sec := 1; sec <= 70; sec++ {
		if sec <= 60 {
			v++
		} else {
			v += 3
		}
		if _, err := c.export(rm("team-a", "shop", "shop-1", counter(exposition.CPUSeconds, numberPoint(at(float64(sec)), time.Time{}, v)))); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		window time.Duration
		want   float64
	}{{10 * time.Second, 3}, {20 * time.Second, 2}} {
		reps := h.store.Read(store.Query{Namespace: "team-a", Selector: map[string]string{"k8s.deployment.name": "shop"},
			Metrics: map[string]bool{exposition.CPUSeconds: true}, Window: tc.window})
		if x := reps[0].Series[0]; math.Abs(x.Rate-tc.want) > 1e-9 {
			t.Errorf("window %s: rate %v, want %v", tc.window, x.Rate, tc.want)
		}
	}
}
