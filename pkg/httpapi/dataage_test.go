package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

// A source that says how old its data is (a Prometheus answer whose newest
// sample is 30 s old) shows that age in /scale and /metrics, so a
// Prometheus that stopped scraping reads as old data, not a calm workload.
func TestDataAgeIsServed(t *testing.T) {
	measured := time.Date(2025, 6, 1, 11, 59, 30, 123456789, time.UTC) // 30 s before the fixture's clock
	old := registrytest.Returning(pressure.Observation{
		Replicas:   []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}},
		MeasuredAt: measured,
	})
	var m *metrics.Metrics
	f := newFixture(t, map[string]*registrytest.Script{"old": old}, func(c *httpapi.Config) {
		m = metrics.New(c.Registry)
		c.Metrics = m.Handler()
	})
	f.use(t, registry.Ref{}, script("old"))
	if got := string(field(t, f.get(t, "/scale").body, "dataAgeSeconds")); got != "30" {
		t.Errorf("dataAgeSeconds %s, want 30", got)
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), "barometer_data_age_seconds{") || !strings.Contains(string(body), "} 30\n") {
		t.Errorf("no data age in /metrics:\n%s", grep(string(body), "data_age"))
	}
}

func grep(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
