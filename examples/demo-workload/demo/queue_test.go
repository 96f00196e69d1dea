package demo

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

func TestQueueFollowsLoad(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	// Capacity 100/s at 50 ms a run: 5 slots.
	w := New(Config{Now: clk.Now, Queue: true})
	step := func(rps float64, secs int) *QueueState {
		w.SetLoad(rps)
		clk.Add(time.Duration(secs) * time.Second)
		return w.State().Queue
	}
	q := step(60, 10)
	if q.Arrivals != 600 || q.Runs != 600 || math.Abs(q.RunSeconds-30) > 1e-9 || q.Ready != 0 || q.Busy != 3 || q.Slots != 5 {
		t.Errorf("under capacity: %+v", q)
	}
	// 150/s against 100/s: 50 a second pile up, every slot busy.
	q = step(150, 10)
	if q.Arrivals != 2100 || q.Runs != 1600 || q.Ready != 500 || q.Busy != 5 {
		t.Errorf("over capacity: %+v", q)
	}
	// Back to 60/s: the backlog drains at 40 a second, slots stay full.
	q = step(60, 5)
	if q.Ready != 300 || q.Runs != 2100 || q.Busy != 5 {
		t.Errorf("draining: %+v", q)
	}
	// Drained mid-interval: everything that waited was served.
	q = step(60, 10)
	if q.Ready != 0 || q.Arrivals != 3000 || q.Runs != 3000 || q.Busy != 3 {
		t.Errorf("drained: %+v", q)
	}
	if pq := New(Config{}).State().Queue; pq != nil {
		t.Errorf("queue %+v outside queue mode", pq)
	}
}

func TestQueueExposition(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	w := New(Config{Now: clk.Now, Queue: true, QueueClass: "batch", ServiceTime: 200 * time.Millisecond})
	w.SetLoad(10)
	clk.Add(10 * time.Second)
	w.SetRetrying(4)
	w.SetReservation("r1", Reservation{Start: 2000, End: 3000, Slots: 2})
	fams, err := w.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	h := byName[exposition.QueueRunDuration].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 100 || math.Abs(h.GetSampleSum()-20) > 1e-9 {
		t.Errorf("histogram %v", h)
	}
	for _, b := range h.GetBucket() {
		if want := map[bool]uint64{true: 100, false: 0}[b.GetUpperBound() >= 0.2]; b.GetCumulativeCount() != want {
			t.Errorf("bucket %v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if m := byName[exposition.QueueRetrying].GetMetric()[0]; m.GetGauge().GetValue() != 4 || m.GetLabel()[0].GetValue() != "batch" {
		t.Errorf("retrying %v", m)
	}
	if m := byName[exposition.QueueReservationSlots].GetMetric()[0]; m.GetGauge().GetValue() != 2 || m.GetLabel()[0].GetValue() != "r1" {
		t.Errorf("slots %v", m)
	}
	if byName[exposition.QueueArrivals].GetMetric()[0].GetCounter().GetValue() != 100 {
		t.Errorf("arrivals %v", byName[exposition.QueueArrivals])
	}
}

func TestQueueHandler(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)} // still: the backlog set stays
	w := New(Config{Queue: true, Now: clk.Now})
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	do := func(method, path string) int {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range []string{"/queue/service-time?s=0.1", "/queue/ready?n=7", "/queue/retrying?n=2", "/queue/due?n=1",
		"/queue/reserved?n=3", "/queue/reservation?id=a&start=10&end=20", "/queue/reservation?id=b&slots=4"} {
		if code := do("POST", p); code != http.StatusNoContent {
			t.Errorf("%s: %d", p, code)
		}
	}
	if code := do("DELETE", "/queue/reservation?id=b"); code != http.StatusNoContent {
		t.Errorf("delete: %d", code)
	}
	for _, bad := range []string{"/queue/ready?n=-1", "/queue/reservation?start=1", "/queue/reservation?id=x&end=NaN"} {
		if code := do("POST", bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d", bad, code)
		}
	}
	q := w.State().Queue
	if q.ServiceTime != 0.1 || q.Ready != 7 || q.Retrying != 2 || q.Due != 1 || q.Reserved != 3 ||
		len(q.Reservations) != 1 || q.Reservations["a"] != (Reservation{Start: 10, End: 20, Slots: 1}) {
		t.Errorf("state %+v", q)
	}
	// Outside queue mode the routes do not exist.
	plain := httptest.NewServer(New(Config{}).Handler())
	defer plain.Close()
	resp, err := http.Post(plain.URL+"/queue/ready?n=1", "", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("queue route outside queue mode: %d", resp.StatusCode)
	}
}
