package metrics_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/target"
)

// fakeClock stands still until a test moves it; its tickers never fire, so
// every sampler takes exactly its first sample.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return make(chan time.Time), func() {}
}

// scripted is a source whose answer the test sets.
type scripted struct {
	obs pressure.Observation
	err error
}

func (s *scripted) Observe(context.Context) (pressure.Observation, error) { return s.obs, s.err }

// scriptedSpec selects one script by name (metadata key "script").
type scriptedSpec struct {
	name string
	src  *scripted
}

func (s scriptedSpec) Key() string                               { return "scripted/" + s.name }
func (s scriptedSpec) New(*slog.Logger) (pressure.Source, error) { return s.src, nil }

// fixture is a live registry with the host source and the scripted source
// registered, driven by a fake clock.
type fixture struct {
	clock *fakeClock
	reg   *target.Registry
}

const interval = 5 * time.Second

func newFixture(t *testing.T, scripts map[string]*scripted) *fixture {
	t.Helper()
	sources := target.NewSources()
	sources.Register("host", target.ParseHost)
	sources.Register("scripted", func(p *target.Params) (target.SourceSpec, error) {
		name := p.String("script", "")
		src, ok := scripts[name]
		if !ok {
			return nil, &target.MetadataError{Key: "script", Value: name, Allowed: "a script the test defined"}
		}
		return scriptedSpec{name: name, src: src}, nil
	})
	clock := &fakeClock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	ctx, cancel := context.WithCancel(context.Background())
	reg := target.NewRegistry(ctx, target.Config{Sources: sources, DefaultInterval: interval, Clock: clock})
	done := make(chan struct{})
	go func() { defer close(done); reg.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &fixture{clock: clock, reg: reg}
}

// acquire starts (or joins) the target for raw metadata and waits for its
// first sample attempt.
func (f *fixture) acquire(t *testing.T, ref target.Ref, raw map[string]string) *target.Target {
	t.Helper()
	md, err := f.reg.Parse(raw)
	if err != nil {
		t.Fatalf("parse %v: %v", raw, err)
	}
	tg, err := f.reg.Acquire(ref, md)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	waitSampled(t, tg)
	return tg
}

func waitSampled(t *testing.T, tg *target.Target) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		snap := tg.Load()
		if snap.Samples > 0 {
			return
		}
		select {
		case <-snap.Next():
		case <-deadline:
			t.Fatalf("target %s: no sample attempt within 10s", tg.Key)
		}
	}
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
