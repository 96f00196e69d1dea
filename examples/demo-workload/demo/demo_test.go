package demo

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func TestPressureFollowsLoad(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	w := New(Config{Now: clk.Now})
	for _, tc := range []struct {
		rps      float64
		wal      int
		cpuShare float64
	}{{0, 0, 0}, {50, 0, 0.5}, {75, 1, 0.75}, {94, 1, 0.94}, {95, 2, 0.95}, {150, 2, 1}} {
		w.SetLoad(tc.rps)
		before := w.State().CPUSeconds
		clk.Add(10 * time.Second)
		s := w.State()
		if s.WalState != tc.wal || math.Abs((s.CPUSeconds-before)/10-tc.cpuShare) > 1e-9 {
			t.Errorf("rps %v: WAL %d, CPU share %v; want %d, %v", tc.rps, s.WalState, (s.CPUSeconds-before)/10, tc.wal, tc.cpuShare)
		}
		if want := tc.rps / 100 * 80000; s.WorkingSet != want || s.MemoryBytes != 64<<20+want*4096 {
			t.Errorf("rps %v: working set %v, memory %v", tc.rps, s.WorkingSet, s.MemoryBytes)
		}
	}
}

func TestHandler(t *testing.T) {
	w := New(Config{PaddingSeries: 5})
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	post := func(path string) int {
		resp, err := http.Post(srv.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if post("/load?rps=80") != http.StatusNoContent || post("/splits?n=3") != http.StatusNoContent {
		t.Fatal("setters refused valid values")
	}
	for _, bad := range []string{"/load?rps=-1", "/load?rps=NaN", "/load", "/splits?n=x"} {
		if code := post(bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d", bad, code)
		}
	}
	resp, err := http.Get(srv.URL + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s State
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || s.RPS != 80 || s.Splits != 3 || s.WalState != 1 {
		t.Errorf("state %+v, %v", s, err)
	}
	// 12 contract series (two placements) and the padding.
	fams, err := w.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fams {
		n += len(f.GetMetric())
		if f.GetName() == "barometer_splits_in_flight" && f.GetMetric()[0].GetGauge().GetValue() != 3 {
			t.Errorf("splits %v", f)
		}
	}
	if n != 12+5 {
		t.Errorf("%d series, want 17", n)
	}
}
