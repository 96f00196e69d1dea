package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// fixture is a live registry with the host source and the scripted source
// (metadata key "script") registered, driven by a fake clock whose tickers
// fire only when told, so every sampler takes exactly its first sample.
type fixture struct {
	clock *samplingtest.FakeClock
	reg   *registry.Registry
}

const interval = 5 * time.Second

func newFixture(t testing.TB, scripts map[string]*registrytest.Script) *fixture {
	t.Helper()
	sources := trigger.NewSchema(host.Kind(), registrytest.Kind("scripted", "", func(name string) *registrytest.Script { return scripts[name] }))
	clock := samplingtest.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	reg := registrytest.NewRegistry(t, registry.Config{Schema: sources, DefaultInterval: interval, Clock: clock})
	return &fixture{clock: clock, reg: reg}
}

// acquire starts (or joins) the target for raw metadata and waits for its
// first sample attempt.
func (f *fixture) acquire(t testing.TB, ref registry.Ref, raw map[string]string) *registry.Target {
	t.Helper()
	md, err := f.reg.Parse(raw)
	if err != nil {
		t.Fatalf("parse %v: %v", raw, err)
	}
	tg, err := f.reg.Acquire(ref, md)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	registrytest.WaitSamples(t, tg, 1)
	return tg
}

// scrape GETs /metrics in the text format and parses it.
func scrape(t *testing.T, m interface{ Handler() http.Handler }) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: status %d: %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// find returns the value of the series of family name whose labels include
// want, and whether there is one.
func find(families map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	fam, ok := families[name]
	if !ok {
		return nil, false
	}
	for _, m := range fam.GetMetric() {
		if hasLabels(m, want) {
			return m, true
		}
	}
	return nil, false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// value reads a gauge, counter or untyped series, failing when it is absent.
func value(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	m, ok := find(families, name, want)
	if !ok {
		t.Fatalf("no series %s%v", name, want)
	}
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	t.Fatalf("series %s%v is neither gauge nor counter", name, want)
	return 0
}
