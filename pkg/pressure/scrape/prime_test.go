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
