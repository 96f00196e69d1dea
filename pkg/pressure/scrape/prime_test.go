package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
)

// TestFirstSampleHasACPURate: a target's first sample reads its replicas
// twice, PrimeDelay apart, so a CPU-bound replica is read at its CPU (0.9
// of its core) and not as memory alone; without PrimeDelay, or without
// room before the sample's deadline, the first sample is memory alone, as
// before. Every scrape the replica serves moves the fake clock on by a
// second, so the rate between two reads is exact.
func TestFirstSampleHasACPURate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prime    time.Duration
		deadline time.Duration
		wantCPU  float64
		scrapes  int
	}{
		{"primed", 10 * time.Millisecond, time.Minute, 0.9, 2},
		{"not primed", 0, time.Minute, 0, 1},
		{"no room before the deadline", time.Hour, time.Minute, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			w := demo.New(demo.Config{Now: clk.Now})
			w.SetLoad(90)
			scrapes := 0
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				scrapes++
				w.Handler().ServeHTTP(rw, r)
				clk.Advance(time.Second)
			}))
			defer srv.Close()
			src := newSource(t, Options{Targets: targets(t, srv.URL+"/metrics"), Now: clk.Now, PrimeDelay: tc.prime, Concurrency: 1})
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()
			obs, err := src.Observe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(obs.Replicas) != 1 || !near(obs.Replicas[0].CPUUtilisation, tc.wantCPU) || scrapes != tc.scrapes {
				t.Fatalf("first sample: %+v after %d scrapes, want CPU %v after %d", obs.Replicas, scrapes, tc.wantCPU, tc.scrapes)
			}
			// The next sample has its rate either way, and reads once.
			before := scrapes
			if obs, err = src.Observe(ctx); err != nil || !near(obs.Replicas[0].CPUUtilisation, 0.9) || scrapes != before+1 {
				t.Fatalf("second sample: %+v %v after %d scrapes", obs.Replicas, err, scrapes-before)
			}
		})
	}
}

// TestARateSpansAtLeastMinRateWindow: a read that comes within
// minRateWindow of the replica's last one (a target's first sample just
// before an aligned tick) reports the replica's last rate, not the rate
// over the short gap, where the replica answering 30 ms late would read
// 0.6 as 0.6 x 64 / 34 = 1.13; the next read's rate spans from the older
// mark, and is exact.
func TestARateSpansAtLeastMinRateWindow(t *testing.T) {
	clk := newClock()
	w := demo.New(demo.Config{Now: clk.Now})
	w.SetLoad(60)
	var late time.Duration // how long after the scrape starts the replica reads its counter
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		clk.Advance(late)
		w.Handler().ServeHTTP(rw, r)
	}))
	defer srv.Close()
	src := newSource(t, Options{Targets: targets(t, srv.URL+"/metrics"), Now: clk.Now, Concurrency: 1})
	cpu := func() float64 {
		t.Helper()
		obs, err := src.Observe(context.Background())
		if err != nil || len(obs.Replicas) != 1 {
			t.Fatalf("%+v %v", obs, err)
		}
		return obs.Replicas[0].CPUUtilisation
	}
	for _, step := range []struct {
		after, late time.Duration
		want        float64
	}{
		{0, 0, 0},             // first sight: no rate
		{time.Second, 0, 0.6}, // a rate over a second
		{34 * time.Millisecond, 30 * time.Millisecond, 0.6}, // too soon: the last rate
		{time.Second, 0, 0.6},                               // over the 1.064 s since the second read
	} {
		clk.Advance(step.after)
		late = step.late
		if got := cpu(); !near(got, step.want) {
			t.Fatalf("%v after the last read, answered %v later: CPU %v, want %v", step.after, step.late, got, step.want)
		}
	}
}
