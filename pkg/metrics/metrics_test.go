package metrics_test

import (
	"errors"
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

// busy is two replicas, the worst at CPU 0.6, with the WAL throttled (0.5):
// resource dominates, raw = 0.6 x 2 = 1.2, and the first sample publishes it.
func busy() *registrytest.Script {
	return registrytest.Returning(pressure.Observation{Replicas: []pressure.ReplicaObservation{
		{Name: "a", CPUUtilisation: 0.6, WalSaturation: pressure.Throttled},
		{Name: "b", CPUUtilisation: 0.2},
	}})
}

func TestSignalMetricsReportTheSnapshot(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{"busy": busy()})
	tg := f.acquire(t, registry.Ref{Namespace: "ns", Name: "app"}, map[string]string{"source": "scripted", "script": "busy", "profile": "responsive"})
	m := metrics.New(f.reg)

	fams := scrape(t, m)
	lbl := map[string]string{"target": tg.Key, "source": "scripted/busy"}
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for lk, lv := range lbl {
			out[lk] = lv
		}
		return out
	}
	for _, c := range []struct {
		name string
		lbl  map[string]string
		want float64
	}{
		{"barometer_targets", nil, 1},
		{"barometer_scale_value", lbl, 1.2},
		{"barometer_raw_scale_value", lbl, 1.2},
		{"barometer_recommended_replicas", lbl, 2},
		{"barometer_compute_pressure", with("dimension", "activation"), 0},
		{"barometer_compute_pressure", with("dimension", "resource"), 0.6},
		{"barometer_compute_pressure", with("dimension", "wal-dispatch"), 0.5},
		{"barometer_observed_replicas", lbl, 2},
		{"barometer_missing_replicas", lbl, 0},
		{"barometer_wal_saturation", lbl, 1},
		{"barometer_wal_saturation_state", with("state", "Healthy"), 0},
		{"barometer_wal_saturation_state", with("state", "Throttled"), 1},
		{"barometer_wal_saturation_state", with("state", "Saturated"), 0},
		{"barometer_storage_over_threshold", lbl, 0},
		{"barometer_storage_wal_retained_bytes", lbl, 0},
		{"barometer_scale_in_allowed", lbl, 0},
		{"barometer_scale_in_held", lbl, 0},
		{"barometer_split_in_flight", lbl, 0},
		{"barometer_signal_age_seconds", lbl, 0},
		{"barometer_signal_stale", lbl, 0},
		{"barometer_signal_warming_up", lbl, 0},
		{"barometer_sample_interval_seconds", lbl, 5},
		{"barometer_last_sample_duration_seconds", lbl, 0},
		{"barometer_last_sample_success", lbl, 1},
		{"barometer_samples_total", lbl, 1},
		{"barometer_sample_failures_total", lbl, 0},
		{"barometer_split_probe_failures_total", lbl, 0},
	} {
		if got := value(t, fams, c.name, c.lbl); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s%v = %v, want %v", c.name, c.lbl, got, c.want)
		}
	}
	for _, name := range []string{"barometer_samples_total", "barometer_sample_failures_total", "barometer_split_probe_failures_total"} {
		if got := fams[name].GetType(); got != dto.MetricType_COUNTER {
			t.Errorf("%s is a %v, want a counter", name, got)
		}
	}

	// Scrapes read the clock, not a cached value: past 3 x the interval the
	// same snapshot is stale and aged, and keeps its last values.
	f.clock.Advance(3*interval + time.Second)
	fams = scrape(t, m)
	if got := value(t, fams, "barometer_signal_stale", lbl); got != 1 {
		t.Errorf("stale after 16s = %v, want 1", got)
	}
	if got := value(t, fams, "barometer_signal_age_seconds", lbl); got != 16 {
		t.Errorf("age after 16s = %v, want 16", got)
	}
	if got := value(t, fams, "barometer_scale_value", lbl); got != 1.2 {
		t.Errorf("stale scale value = %v, want the last one, 1.2", got)
	}
	if got := value(t, fams, "barometer_samples_total", lbl); got != 1 {
		t.Errorf("samples_total after scrapes = %v, want 1: a scrape must never sample", got)
	}
}

// Before the first successful sample there is no signal to report: the
// value series are absent (no fake zeros) and the sampling facts say why.
func TestSignalMetricsWarmingUpHaveNoFakeZeros(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{"down": registrytest.Failing(errors.New("scripted failure"))})
	tg := f.acquire(t, registry.Ref{}, map[string]string{"source": "scripted", "script": "down", "profile": "responsive"})
	fams := scrape(t, metrics.New(f.reg))
	lbl := map[string]string{"target": tg.Key}

	for name, want := range map[string]float64{
		"barometer_signal_stale":          1,
		"barometer_signal_warming_up":     1,
		"barometer_last_sample_success":   0,
		"barometer_samples_total":         1,
		"barometer_sample_failures_total": 1,
	} {
		if got := value(t, fams, name, lbl); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{
		"barometer_scale_value", "barometer_raw_scale_value", "barometer_recommended_replicas",
		"barometer_compute_pressure", "barometer_wal_saturation", "barometer_signal_age_seconds",
	} {
		if m, ok := find(fams, name, lbl); ok {
			t.Errorf("%s present while warming up: %v", name, m)
		}
	}
}

// The host source reads this machine; the scrape carries its signal next to
// the Go and process collectors.
func TestHostTargetAndRuntimeCollectors(t *testing.T) {
	f := newFixture(t, nil)
	tg := f.acquire(t, registry.Ref{}, map[string]string{})
	if err := tg.Load().LastErr; err != nil {
		t.Skipf("host source unavailable here: %v", err)
	}
	fams := scrape(t, metrics.New(f.reg))
	lbl := map[string]string{"target": tg.Key, "source": "host"}
	if v := value(t, fams, "barometer_scale_value", lbl); v < 0 || math.IsNaN(v) {
		t.Errorf("host scale value %v", v)
	}
	if v := value(t, fams, "barometer_observed_replicas", lbl); v != 1 {
		t.Errorf("host observed replicas %v, want 1", v)
	}
	for _, name := range []string{"go_goroutines", "go_gc_heap_live_bytes", "process_cpu_seconds_total", "go_build_info", "promhttp_metric_handler_requests_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s missing from the scrape", name)
		}
	}
}

// Each Metrics has its own registry: two in one process do not collide.
func TestMetricsInstancesAreIndependent(t *testing.T) {
	f := newFixture(t, nil)
	a, b := metrics.New(f.reg), metrics.New(f.reg)
	if _, err := a.Gatherer().Gather(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Gatherer().Gather(); err != nil {
		t.Fatal(err)
	}
}
