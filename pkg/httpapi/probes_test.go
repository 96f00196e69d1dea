package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

type probeBody struct {
	Status  string `json:"status"`
	Details map[string]struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"details"`
}

func TestReadiness(t *testing.T) {
	// The workload is saturated (Unhealthy): readiness must not care.
	f := newFixture(t, map[string]*registrytest.Script{"hot": replicas(1, pressure.Saturated)})
	f.use(t, registry.Ref{}, script("hot"))

	ready := func(wantCode int, wantDown string) {
		t.Helper()
		r := f.get(t, "/readyz")
		if r.code != wantCode {
			t.Fatalf("/readyz status %d, want %d: %s", r.code, wantCode, r.body)
		}
		b := decode[probeBody](t, r)
		for name, d := range b.Details {
			if down := d.Status == "down"; down != (name == wantDown) {
				t.Errorf("check %s is %s (%s); only %q should be down", name, d.Status, d.Error, wantDown)
			}
		}
	}

	ready(http.StatusOK, "") // fresh, not draining, despite the pressure

	f.draining.Store(true)
	ready(http.StatusServiceUnavailable, "draining")
	if r := f.get(t, "/livez"); r.code != http.StatusOK {
		t.Errorf("/livez while draining: %d, want 200: liveness is the process only", r.code)
	}
	f.draining.Store(false)
	ready(http.StatusOK, "")

	f.clock.Advance(3*interval + 1)
	ready(http.StatusServiceUnavailable, "signal")
	if r := f.get(t, "/readyz"); !strings.Contains(string(r.body), "signal stale") {
		t.Errorf("readiness body does not say the signal is stale: %s", r.body)
	}
}

func TestReadinessWhileWarmingUp(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{"down": failing()})
	f.use(t, registry.Ref{}, script("down"))
	r := f.get(t, "/readyz")
	if r.code != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "warming up") {
		t.Fatalf("/readyz %d %s, want 503 warming up", r.code, r.body)
	}
}

func TestReadinessWithoutADefaultTargetIsDrainingOnly(t *testing.T) {
	f := newFixture(t, nil)
	if r := f.get(t, "/readyz"); r.code != http.StatusOK {
		t.Fatalf("/readyz %d, want 200: %s", r.code, r.body)
	}
	f.draining.Store(true)
	if r := f.get(t, "/readyz"); r.code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining %d, want 503", r.code)
	}
}

func TestLiveness(t *testing.T) {
	f := newFixture(t, nil)
	r := f.get(t, "/livez")
	if r.code != http.StatusOK || decode[probeBody](t, r).Status != "up" {
		t.Fatalf("/livez %d %s", r.code, r.body)
	}
}
