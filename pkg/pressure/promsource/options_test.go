package promsource

import (
	"testing"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

func TestDefaultQueries(t *testing.T) {
	q := DefaultQueries(exposition.DefaultNames(), "", 0)
	if q.Activation != "barometer_activations" || q.Replicas != "" || q.Resource != "" {
		t.Errorf("unscoped defaults = %+v", q)
	}
	// A limit gauge that is not above 0 is filtered, not divided by.
	if want := "irate(process_cpu_seconds_total[5m]) / (barometer_cpu_limit_cores > 0 < +Inf)"; q.CPU != want {
		t.Errorf("cpu = %q, want %q", q.CPU, want)
	}

	names := exposition.DefaultNames()
	names.Activations = "shop_sessions"
	q = DefaultQueries(names, `job="shop"`, 2)
	if q.Activation != `shop_sessions{job="shop"}` || q.PartitionAccount != `barometer_wal_partition_account{job="shop"}` {
		t.Errorf("scoped defaults = %+v", q)
	}
	want := `(irate(process_cpu_seconds_total{job="shop"}[5m]) / (barometer_cpu_limit_cores{job="shop"} > 0 < +Inf)) or (irate(process_cpu_seconds_total{job="shop"}[5m]) / 2)`
	if q.CPU != want {
		t.Errorf("cpu with a fallback limit = %q, want %q", q.CPU, want)
	}
}
