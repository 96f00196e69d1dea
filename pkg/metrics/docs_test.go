package metrics_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

// TestOperationsDocNamesTheServedLabels holds docs/operations.md's list of
// per-target metrics to what /metrics serves: every family it names is
// served with exactly the per-target labels it states, plus those in the
// family's own braces, and every per-target family served is named.
func TestOperationsDocNamesTheServedLabels(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	bullet := regexp.MustCompile("(?s)- per target \\(labels ([^)]*)\\):(.*?)\n- ").FindSubmatch(doc)
	if bullet == nil {
		t.Fatal(`docs/operations.md has no "- per target (labels ...):" bullet`)
	}
	perTarget := regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(string(bullet[1]), -1)
	var common []string
	for _, m := range perTarget {
		common = append(common, m[1])
	}
	documented := map[string][]string{} // family -> its labels
	for _, m := range regexp.MustCompile("`(barometer_[a-z_]+)(?:\\{([a-z_,]+)\\})?`").FindAllStringSubmatch(string(bullet[2]), -1) {
		labels := slices.Clone(common)
		if m[2] != "" {
			labels = append(labels, strings.Split(m[2], ",")...)
		}
		slices.Sort(labels)
		documented[m[1]] = labels
	}

	// A target with every family but a scrape's errors and a data age
	// (sources this fixture does not run).
	f := newFixture(t, map[string]*registrytest.Script{"busy": busy()})
	f.acquire(t, registry.Ref{Namespace: "ns", Name: "app"}, map[string]string{"source": "scripted", "script": "busy", "costPerReplicaSecond": "1"})
	served := map[string][]string{}
	for name, fam := range scrape(t, metrics.New(f.reg)) {
		if !strings.HasPrefix(name, "barometer_") || len(fam.GetMetric()) == 0 {
			continue
		}
		labels := map[string]bool{}
		for _, l := range fam.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = true
		}
		if !labels["target"] {
			continue // not a per-target family
		}
		served[name] = slices.Sorted(maps.Keys(labels))
	}
	for name, labels := range served {
		if want, ok := documented[name]; !ok {
			t.Errorf("%s is served per target but docs/operations.md does not name it", name)
		} else if !slices.Equal(labels, want) {
			t.Errorf("%s: served with %v, docs/operations.md says %v", name, labels, want)
		}
	}
	for name := range documented {
		if _, ok := served[name]; !ok && name != "barometer_scrape_errors_total" && name != "barometer_data_age_seconds" {
			t.Errorf("docs/operations.md names %s, which this target's /metrics does not serve", name)
		}
	}
}
