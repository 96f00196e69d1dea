package promsource

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// queueQueries is the contract plus the queue, named after the dimension.
var queueQueries = func() Queries {
	q := contract
	q.Arrivals, q.RunSeconds, q.Runs = "arrivals", "runsecs", "runs"
	q.Ready, q.Retrying, q.Due, q.Busy, q.Reserved = "ready", "retrying", "due", "busy", "reserved"
	q.ReservationStart, q.ReservationEnd, q.ReservationSlots = "start", "end", "slots"
	return q
}()

func observeQueue(t *testing.T, src *Source) *pressure.QueueObservation {
	t.Helper()
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return obs.Queue
}

func TestFoldsTheQueue(t *testing.T) {
	start := float64(testNow.Unix())
	src, _ := testSource(queueQueries, map[string]any{
		"act": vec("pod=a", 1.0, "pod=b", 1.0),
		// b's arrivals come in two series (say, by source), which add up.
		"arrivals": vec("pod=a", 100.0, "pod=b,source=api", 40.0, "pod=b,source=cron", 2.0),
		"runsecs":  vec("pod=a", 9.0, "pod=b", 3.0),
		"runs":     vec("pod=a", 30.0, "pod=b", 10.0),
		"ready":    vec("class=critical", 2.0, "class=batch", 5.0),
		"retrying": vec("class=batch", 1.0, "", 3.0),
		"due":      vec("", 4.0),
		"busy":     vec("", 6.0),
		"reserved": vec("", 2.0),
		"start":    vec("id=nightly", start, "id=open", start),
		"end":      vec("id=nightly", start+3600),
		"slots":    vec("id=nightly", 3.0),
	})
	got := observeQueue(t, src)
	want := &pressure.QueueObservation{
		Arrivals: 142, RunSeconds: 12, Runs: 40,
		Backlog: []pressure.ClassBacklog{{Class: "", Retrying: 3}, {Class: "batch", Ready: 5, Retrying: 1}, {Class: "critical", Ready: 2}},
		Due:     4, Busy: 6,
		Reservations: []pressure.Reservation{
			{Start: testNow, End: testNow.Add(time.Hour), Slots: 3},
			{Start: testNow, Slots: 1},
			{Slots: 2},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("queue\n got %+v\nwant %+v", got, want)
	}
}

func TestNoQueueSeriesIsNoQueue(t *testing.T) {
	for name, q := range map[string]Queries{"queue queries return nothing": queueQueries, "no queue queries": contract} {
		src, _ := testSource(q, map[string]any{"act": vec("pod=a", 1.0)})
		if got := observeQueue(t, src); got != nil {
			t.Errorf("%s: queue %+v, want nil", name, got)
		}
	}
}

// TestQueueCountersHeldPerReplica: a replica that goes away does not make
// the arrivals fall; one that restarts adds only what it counts anew.
func TestQueueCountersHeldPerReplica(t *testing.T) {
	src, api := testSource(queueQueries, nil)
	for i, step := range []struct {
		arrivals any
		want     float64
	}{
		{vec("pod=a", 100.0, "pod=b", 50.0), 150},
		{vec("pod=a", 110.0, "pod=b", 60.0), 170},
		{vec("pod=a", 115.0), 175},                 // b scaled in: held
		{vec("pod=a", 120.0, "pod=c", 500.0), 180}, // c new: counts from here
		{vec("pod=a", 3.0, "pod=c", 510.0), 193},   // a restarted
	} {
		api.answers = map[string]any{"arrivals": step.arrivals}
		if q := observeQueue(t, src); q == nil || q.Arrivals != step.want {
			t.Fatalf("step %d: queue %+v, want arrivals %v", i, q, step.want)
		}
	}
}

func TestQueueOnlyReplicas(t *testing.T) {
	// Only the counters name replicas; a series without the replica label
	// is the workload's own and names none.
	src, _ := testSource(Queries{Arrivals: "arrivals"}, map[string]any{
		"arrivals": vec("pod=a", 1.0, "pod=b", 2.0, "job=batch", 10.0),
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Replicas) != 2 || obs.Queue == nil || obs.Queue.Arrivals != 13 {
		t.Errorf("replicas %+v queue %+v", obs.Replicas, obs.Queue)
	}
}

// TestQueueWithoutReplicas: with no replica at all but a queue of the
// workload's own (series that name no replica, here a scheduler's), the
// sample is the queue with zero replicas and nothing missing, so a queue
// policy can scale up from zero. Replicas that are there but all down
// still fail the sample, as does nothing at all.
func TestQueueWithoutReplicas(t *testing.T) {
	queue := map[string]any{
		"ready":    vec("class=normal,job=scheduler", 5.0),
		"arrivals": vec("job=scheduler", 100.0),
	}
	for name, q := range map[string]Queries{"no replicas query": queueQueries, "empty replicas query": withReplicas(queueQueries, "up")} {
		src, _ := testSource(q, queue)
		obs, err := src.Observe(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := &pressure.QueueObservation{Arrivals: 100, Backlog: []pressure.ClassBacklog{{Class: "normal", Ready: 5}}}
		if len(obs.Replicas) != 0 || len(obs.Missing) != 0 || !reflect.DeepEqual(obs.Queue, want) || !obs.ObservedAt.Equal(testNow) {
			t.Errorf("%s: %+v (queue %+v), want zero replicas, nothing missing, queue %+v", name, obs, obs.Queue, want)
		}
	}
	down := map[string]any{"up": vec("pod=a", 0.0)}
	for k, v := range queue {
		down[k] = v
	}
	for name, tc := range map[string]struct {
		q       Queries
		answers map[string]any
	}{
		"replicas all down": {withReplicas(queueQueries, "up"), down},
		"no queue either":   {queueQueries, nil},
	} {
		src, _ := testSource(tc.q, tc.answers)
		if obs, err := src.Observe(context.Background()); !errors.Is(err, ErrNoReplicas) {
			t.Errorf("%s: %+v, %v; want ErrNoReplicas", name, obs, err)
		}
	}
}

func withReplicas(q Queries, replicas string) Queries {
	q.Replicas = replicas
	return q
}

func TestReservationWithoutIDFailsTheSample(t *testing.T) {
	src, _ := testSource(queueQueries, map[string]any{"act": vec("pod=a", 1.0), "slots": vec("pod=a", 1.0)})
	_, err := src.Observe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "reservationSlotsQuery") || !strings.Contains(err.Error(), "no id label") {
		t.Fatalf("err = %v", err)
	}
}

func TestDefaultQueueQueries(t *testing.T) {
	names := exposition.DefaultNames()
	names.QueueRunDuration = "job_seconds"
	q := DefaultQueries(names, `job="shop"`, 0)
	for got, want := range map[string]string{
		q.Arrivals:         `barometer_queue_arrivals_total{job="shop"}`,
		q.RunSeconds:       `job_seconds_sum{job="shop"}`,
		q.Runs:             `job_seconds_count{job="shop"}`,
		q.Ready:            `sum by (class) (barometer_queue_ready{job="shop"})`,
		q.Retrying:         `sum by (class) (barometer_queue_retrying{job="shop"})`,
		q.Due:              `sum(barometer_queue_due_fixed_start{job="shop"})`,
		q.Busy:             `sum(barometer_queue_busy{job="shop"})`,
		q.Reserved:         `sum(barometer_queue_reserved{job="shop"})`,
		q.ReservationStart: `min by (id) (barometer_queue_reservation_start_timestamp_seconds{job="shop"})`,
		q.ReservationEnd: `min by (id) (barometer_queue_reservation_end_timestamp_seconds{job="shop"}) == 0 or ` +
			`max by (id) (barometer_queue_reservation_end_timestamp_seconds{job="shop"})`,
		q.ReservationSlots: `max by (id) (barometer_queue_reservation_slots{job="shop"})`,
	} {
		if got != want {
			t.Errorf("query %q, want %q", got, want)
		}
	}
}
