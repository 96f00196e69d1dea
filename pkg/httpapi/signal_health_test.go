package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/health"
	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

type verdictBody struct {
	Status string   `json:"status"`
	Causes []string `json:"causes"`
	Data   struct {
		Worst         float64 `json:"worst"`
		WalSaturation string  `json:"walSaturation"`
	} `json:"data"`
	Stale  bool   `json:"stale"`
	Target string `json:"target"`
}

func TestSignalHealthProjection(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{
		"calm":      replicas(0.1, pressure.Healthy),
		"throttled": replicas(0.1, pressure.Throttled),
		"warm":      replicas(0.9, pressure.Healthy),
		"saturated": replicas(0.1, pressure.Saturated),
		"hot":       replicas(0.97, pressure.Healthy),
	})
	calm := f.use(t, registry.Ref{}, script("calm"))
	for _, name := range []string{"throttled", "warm", "saturated", "hot"} {
		f.use(t, registry.Ref{Namespace: "ns", Name: name}, script(name))
	}

	for _, c := range []struct {
		path       string
		wantCode   int
		wantStatus string
	}{
		{"/health/signal", http.StatusOK, "Healthy"},
		{"/health/signal/ns/throttled", http.StatusOK, "Degraded"},
		{"/health/signal/ns/warm", http.StatusOK, "Degraded"},
		{"/health/signal/ns/saturated", http.StatusServiceUnavailable, "Unhealthy"},
		{"/health/signal/ns/hot", http.StatusServiceUnavailable, "Unhealthy"},
	} {
		r := f.get(t, c.path)
		v := decode[verdictBody](t, r)
		if r.code != c.wantCode || v.Status != c.wantStatus {
			t.Errorf("%s: %d %s, want %d %s: %s", c.path, r.code, v.Status, c.wantCode, c.wantStatus, r.body)
		}
		if v.Stale || v.Target == "" {
			t.Errorf("%s: stale %v target %q", c.path, v.Stale, v.Target)
		}
		if (v.Status == "Healthy") != (len(v.Causes) == 0) {
			t.Errorf("%s: causes %v for %s", c.path, v.Causes, v.Status)
		}
	}
	if v := decode[verdictBody](t, f.get(t, "/health/signal")); v.Target != calm.Key {
		t.Errorf("default projection serves %q, want %q", v.Target, calm.Key)
	}
	if got := keys(t, f.get(t, "/health/signal").body); len(got) < 5 || got[0] != "status" || got[3] != "stale" || got[4] != "target" {
		t.Errorf("projection keys %v, want status, causes, data, stale, target", got)
	}

	wantError(t, f.get(t, "/health/signal/ns/nope"), http.StatusNotFound, "ns/nope")

	// Data too old to trust cannot vouch for the workload.
	f.clock.Advance(3*interval + 1)
	r := f.get(t, "/health/signal")
	if v := decode[verdictBody](t, r); r.code != http.StatusServiceUnavailable || !v.Stale || v.Status != "Healthy" {
		t.Errorf("stale projection: %d %+v, want 503, stale, last verdict Healthy", r.code, v)
	}
}

// The zero Health options mean the documented tiers; explicit options
// replace them.
func TestSignalHealthOptions(t *testing.T) {
	scripts := map[string]*registrytest.Script{"warm": replicas(0.9, pressure.Healthy)}
	f := newFixture(t, scripts)
	f.use(t, registry.Ref{}, script("warm"))
	if v := decode[verdictBody](t, f.get(t, "/health/signal")); v.Status != "Degraded" {
		t.Errorf("default tiers: %s, want Degraded at 0.9", v.Status)
	}

	off := newFixture(t, scripts, func(c *httpapi.Config) {
		c.Health = health.Options{ComputeTiers: false, DegradedAt: 1, UnhealthyAt: 1}
	})
	off.use(t, registry.Ref{}, script("warm"))
	if v := decode[verdictBody](t, off.get(t, "/health/signal")); v.Status != "Healthy" {
		t.Errorf("tiers off: %s, want Healthy", v.Status)
	}
}
