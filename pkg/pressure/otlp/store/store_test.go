package store_test

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store/storetest"
)

func TestQuantile(t *testing.T) {
	bounds := []float64{1, 2, 4}
	for _, tc := range []struct {
		q      float64
		counts []float64
		want   float64
		ok     bool
	}{
		{0.5, []float64{0, 10, 0, 0}, 1.5, true},  // halfway into (1,2]
		{0.25, []float64{4, 0, 0, 0}, 0.25, true}, // the first bucket starts at 0
		{0.99, []float64{0, 0, 1, 9}, 4, true},    // in the open bucket: the largest bound
		{0.5, []float64{0, 0, 0, 0}, 0, false},    // no observations
		{0.5, []float64{1, 1}, 0, false},          // counts that do not match the bounds
		{math.NaN(), []float64{1, 1, 1, 1}, 0, false},
	} {
		got, ok := store.Quantile(tc.q, bounds, tc.counts)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Quantile(%v, %v) = %v %v, want %v %v", tc.q, tc.counts, got, ok, tc.want, tc.ok)
		}
	}
}

// A series not written for Retention is forgotten, with its replica, and
// its memory and series count are given back, so the caps admit new ones.
func TestSweepForgetsAndReleases(t *testing.T) {
	now := time.Now()
	reg := prometheus.NewRegistry()
	st, err := store.New(store.Options{MaxSeries: 12, Retention: time.Minute, Now: func() time.Time { return now }}, reg)
	if err != nil {
		t.Fatal(err)
	}
	push := storetest.ContractPush(1, now)
	if res, err := st.Ingest(push.GetResourceMetrics(), allow{}); err != nil || res.Accepted != 12 {
		t.Fatalf("%+v %v", res, err)
	}
	q := store.Query{Namespace: "team-a", Selector: map[string]string{"service.name": "shop"}, Metrics: map[string]bool{"barometer_activations": true}, Window: time.Minute}
	if len(st.Read(q)) != 1 {
		t.Fatal("not stored")
	}
	// Full: a second pod is refused.
	other := storetest.ContractPush(2, now)
	if res, _ := st.Ingest(other.GetResourceMetrics()[1:], allow{}); res.Rejected != 12 {
		t.Fatalf("over the series cap: %+v", res)
	}
	now = now.Add(2 * time.Minute)
	st.Sweep()
	if len(st.Read(q)) != 0 {
		t.Fatal("a series past retention is still read")
	}
	if got := testutil.ToFloat64(gaugeOf(t, reg, "barometer_otlp_memory_bytes")); got != 0 {
		t.Errorf("memory %v after the sweep, want 0", got)
	}
	storetest.SetTime(other, now)
	if res, _ := st.Ingest(other.GetResourceMetrics()[1:], allow{}); res.Accepted != 12 {
		t.Fatalf("after the sweep: %+v, want the second pod admitted", res)
	}
}

func gaugeOf(t testing.TB, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: "copy"}, func() float64 { return f.GetMetric()[0].GetGauge().GetValue() })
		}
	}
	t.Fatalf("no %s", name)
	return nil
}
