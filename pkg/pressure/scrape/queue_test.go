package scrape

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

func observeOK(t *testing.T, src *Source) pressure.Observation {
	t.Helper()
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// TestQueueOfDemoReplicas: three demo replicas in queue mode, one past its
// capacity, are read as one queue: counters and gauges summed, the backlog
// by class.
func TestQueueOfDemoReplicas(t *testing.T) {
	clk := newClock()
	cfg := demo.Config{Now: clk.Now, Queue: true}
	crit := cfg
	crit.QueueClass = "critical"
	a, b, hot := startDemo(t, 30, cfg), startDemo(t, 60, cfg), startDemo(t, 150, crit)
	src := newSource(t, Options{Targets: targets(t, a.url(), b.url(), hot.url()), Now: clk.Now})

	check := func(phase string, wantHotReady float64) {
		t.Helper()
		q := observeOK(t, src).Queue
		if q == nil {
			t.Fatalf("%s: no queue", phase)
		}
		var want pressure.QueueObservation
		for _, r := range []replica{a, b, hot} {
			s := r.State().Queue
			want.Arrivals += s.Arrivals
			want.RunSeconds += s.RunSeconds
			want.Runs += s.Runs
			want.Busy += s.Busy
		}
		want.Backlog = []pressure.ClassBacklog{{Class: "critical", Ready: wantHotReady}, {Class: "normal"}}
		if !nearQueue(*q, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", phase, *q, want)
		}
	}
	check("at start", 0)
	clk.Advance(10 * time.Second)
	// 30 + 60 + 150 arrivals a second; the hot replica piles up 50 a second.
	check("after 10s", 500)
	if q := observeOK(t, src).Queue; q.Arrivals != 2400 || q.Busy != 2+3+5 {
		t.Errorf("arrivals %v busy %v, want 2400 and 10", q.Arrivals, q.Busy)
	}
}

// nearQueue compares queues, allowing for float sums taken in another order.
func nearQueue(a, b pressure.QueueObservation) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*max(1, math.Abs(x), math.Abs(y)) }
	if !near(a.Arrivals, b.Arrivals) || !near(a.RunSeconds, b.RunSeconds) || !near(a.Runs, b.Runs) ||
		!near(a.Due, b.Due) || !near(a.Busy, b.Busy) || len(a.Backlog) != len(b.Backlog) {
		return false
	}
	for i := range a.Backlog {
		x, y := a.Backlog[i], b.Backlog[i]
		if x.Class != y.Class || !near(x.Ready, y.Ready) || !near(x.Retrying, y.Retrying) {
			return false
		}
	}
	return reflect.DeepEqual(a.Reservations, b.Reservations)
}

// TestNoQueueSeriesIsNoQueue: a pressure-only workload has no queue view;
// one queue replica among pressure-only ones makes the queue its own.
func TestNoQueueSeriesIsNoQueue(t *testing.T) {
	plain := startDemo(t, 30, demo.Config{})
	src := newSource(t, Options{Targets: targets(t, plain.url())})
	if q := observeOK(t, src).Queue; q != nil {
		t.Fatalf("pressure-only replica: queue %+v", q)
	}
	// The queued replica's clock stands still, so its backlog of 7 does not
	// drain between being set and being read (on a busy machine it did).
	queued := startDemo(t, 30, demo.Config{Queue: true, Now: newClock().Now})
	queued.SetBacklog(7)
	src = newSource(t, Options{Targets: targets(t, plain.url(), queued.url())})
	if q := observeOK(t, src).Queue; q == nil || len(q.Backlog) != 1 || q.Backlog[0].Ready != 7 {
		t.Fatalf("queue %+v, want the one replica's backlog", q)
	}
}

// The three ways to expose the run time, and the backlog and reservation
// series, spread over three replicas.
const (
	queueHistogram = `# TYPE barometer_queue_arrivals_total counter
barometer_queue_arrivals_total{source="api"} 100
barometer_queue_arrivals_total{source="cron"} 20
# TYPE barometer_queue_run_duration_seconds histogram
barometer_queue_run_duration_seconds_bucket{le="0.1"} 3
barometer_queue_run_duration_seconds_bucket{le="+Inf"} 4
barometer_queue_run_duration_seconds_sum 0.9
barometer_queue_run_duration_seconds_count 4
barometer_queue_ready{class="critical"} 2
barometer_queue_ready{class="batch"} 5
barometer_queue_retrying{class="batch"} 1
barometer_queue_busy 3
barometer_queue_reservation_start_timestamp_seconds{id="nightly"} 1767225600
barometer_queue_reservation_end_timestamp_seconds{id="nightly"} 1767229200
barometer_queue_reservation_slots{id="nightly"} 2
barometer_queue_reservation_start_timestamp_seconds{id="open"} 1767225600
barometer_queue_reservation_slots{id="nobody"} 0
barometer_queue_reservation_slots 9
`
	queueSummary = `# TYPE barometer_queue_run_duration_seconds summary
barometer_queue_run_duration_seconds{quantile="0.5"} 0.2
barometer_queue_run_duration_seconds_sum 2
barometer_queue_run_duration_seconds_count 10
barometer_queue_ready{class="critical"} 1
barometer_queue_due_fixed_start 4
barometer_queue_busy 1
barometer_queue_reservation_end_timestamp_seconds{id="nightly"} 1767232800
barometer_queue_reserved 2
`
	queueCounters = `# TYPE barometer_queue_run_duration_seconds_sum counter
barometer_queue_run_duration_seconds_sum 5
# TYPE barometer_queue_run_duration_seconds_count counter
barometer_queue_run_duration_seconds_count 20
barometer_queue_arrivals_total 30
`
)

func TestQueueSeriesByLabel(t *testing.T) {
	var urls []string
	for _, body := range []string{queueHistogram, queueSummary, queueCounters} {
		urls = append(urls, static(t, body).URL)
	}
	q := observeOK(t, newSource(t, Options{Targets: targets(t, urls...)})).Queue
	start := time.Unix(1767225600, 0).UTC()
	want := pressure.QueueObservation{
		Arrivals: 150, RunSeconds: 7.9, Runs: 34,
		Backlog: []pressure.ClassBacklog{{Class: "batch", Ready: 5, Retrying: 1}, {Class: "critical", Ready: 3}},
		Due:     4, Busy: 4,
		Reservations: []pressure.Reservation{
			// Joined across replicas: the latest end of the two reported.
			{Start: start, End: start.Add(2 * time.Hour), Slots: 2},
			{Start: start, Slots: 1},
			{Slots: 2},
		},
	}
	if q == nil || !nearQueue(*q, want) {
		t.Errorf("queue\n got %+v\nwant %+v", q, want)
	}
}

func TestQueueRenames(t *testing.T) {
	names := exposition.DefaultNames()
	names.QueueArrivals = "jobs_enqueued_total"
	names.QueueRunDuration = "job_seconds"
	names.QueueReady = "jobs_waiting"
	srv := static(t, `jobs_enqueued_total 7
job_seconds_sum 3
job_seconds_count 6
jobs_waiting{class="x"} 2
barometer_queue_arrivals_total 1000
`)
	q := observeOK(t, newSource(t, Options{Targets: targets(t, srv.URL), Names: names})).Queue
	want := pressure.QueueObservation{Arrivals: 7, RunSeconds: 3, Runs: 6, Backlog: []pressure.ClassBacklog{{Class: "x", Ready: 2}}}
	if q == nil || !nearQueue(*q, want) {
		t.Errorf("queue %+v, want %+v", q, want)
	}
}

// TestQueueCountersDoNotFall: a replica that fails a scrape, comes back,
// restarts, and a replica that appears late: the summed arrivals never
// fall and never jump by a replica's history.
func TestQueueCountersDoNotFall(t *testing.T) {
	clk := newClock()
	cfg := demo.Config{Now: clk.Now, Queue: true}
	steady := startDemo(t, 10, cfg)
	flaky := demo.New(cfg)
	flaky.SetLoad(20)
	var current atomic.Pointer[demo.Workload]
	current.Store(flaky)
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(rw, "down", http.StatusServiceUnavailable)
			return
		}
		current.Load().Handler().ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	late := startDemo(t, 40, cfg)
	clk.Advance(100 * time.Second) // every replica has a history: 1000, 2000, 4000

	src := newSource(t, Options{Targets: targets(t, steady.url(), srv.URL), Now: clk.Now})
	step := func(phase string, want float64) {
		t.Helper()
		q := observeOK(t, src).Queue
		if q == nil || math.Abs(q.Arrivals-want) > 1e-6 {
			t.Fatalf("%s: queue %+v, want arrivals %v", phase, q, want)
		}
		clk.Advance(time.Second)
	}
	step("first sample: the whole history", 3000)
	step("one second at 10 + 20", 3030)
	down.Store(true)
	step("flaky down: its 2020 held", 3040)
	down.Store(false)
	step("back, with the 40 it counted while down", 3090)

	restarted := demo.New(cfg)
	restarted.SetLoad(20)
	current.Store(restarted) // its counter starts again from 0
	step("restarted: what it had counted stays", 3100)

	src.opts.Targets = targets(t, steady.url(), srv.URL, late.url())
	src.static = staticJobs(src.opts.Targets)
	step("a replica first seen late counts from now", 3130)
	step("and then like the others", 3200)
}
