package promkind

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

const promServer = "http://prometheus.monitoring.svc:9090"

// parseProm parses prometheus metadata with the default allow-list,
// adding source and serverAddress unless given.
func parseProm(t *testing.T, list *allow.List, kv map[string]string) (prometheusSpec, error) {
	t.Helper()
	raw := map[string]string{"source": KindName, "serverAddress": promServer}
	maps.Copy(raw, kv)
	s := trigger.NewSchema(Kind(list, nil))
	md, err := s.Parse(raw, 5*time.Second)
	if err != nil {
		return prometheusSpec{}, err
	}
	return md.Source.(prometheusSpec), nil
}

func TestPrometheusDefaults(t *testing.T) {
	spec, err := parseProm(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := promsource.DefaultQueries(exposition.DefaultNames(), "", 0)
	if spec.server != promServer || spec.label != "pod" || spec.timeout != 3*time.Second || spec.queries != want {
		t.Errorf("defaults = %+v", spec)
	}
	if _, err := spec.New(nil); err != nil {
		t.Errorf("New: %v", err)
	}
}

func TestPrometheusKeys(t *testing.T) {
	spec, err := parseProm(t, nil, map[string]string{
		"selector": `job="shop", namespace=~"prod|stage"`, "replicaLabel": "instance", "queryTimeout": "1s",
		"activationMetric": "shop_sessions", "cpuLimitCores": "2",
		"replicasQuery": `up{job="shop"}`, "walStateQuery": "max by (instance) (wal)",
	})
	if err != nil {
		t.Fatal(err)
	}
	q := spec.queries
	if q.Activation != `shop_sessions{job="shop", namespace=~"prod|stage"}` || q.Replicas != `up{job="shop"}` ||
		q.WalState != "max by (instance) (wal)" || !strings.Contains(q.CPU, " / 2)") {
		t.Errorf("queries = %+v", q)
	}
	if spec.label != "instance" || spec.timeout != time.Second {
		t.Errorf("spec = %+v", spec)
	}

	spec, err = parseProm(t, nil, map[string]string{"resourceQuery": "max by (pod) (util)"})
	if err != nil {
		t.Fatal(err)
	}
	if q := spec.queries; q.Resource != "max by (pod) (util)" || q.CPU != "" || q.Memory != "" || q.MemoryLimit != "" {
		t.Errorf("resourceQuery must replace cpu and memory: %+v", q)
	}
}

func TestPrometheusQueueKeys(t *testing.T) {
	spec, err := parseProm(t, nil, map[string]string{
		"selector": `job="shop"`, "queueRunDurationMetric": "job_seconds", "queueReadyMetric": "jobs_waiting",
		"arrivalsQuery": `sum by (pod) (jobs_total)`, "reservedQuery": "vector(2)",
	})
	if err != nil {
		t.Fatal(err)
	}
	q := spec.queries
	for got, want := range map[string]string{
		q.Arrivals:   `sum by (pod) (jobs_total)`,
		q.RunSeconds: `job_seconds_sum{job="shop"}`,
		q.Runs:       `job_seconds_count{job="shop"}`,
		q.Ready:      `sum by (class) (jobs_waiting{job="shop"})`,
		q.Busy:       `sum(barometer_queue_busy{job="shop"})`,
		q.Reserved:   "vector(2)",
	} {
		if got != want {
			t.Errorf("query %q, want %q", got, want)
		}
	}
	def, err := parseProm(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.Key() == spec.Key() || strings.Contains(spec.Key(), "vector(2)") {
		t.Errorf("key %s", spec.Key())
	}
}

func TestPrometheusErrorsNameTheKey(t *testing.T) {
	loopback, err := allow.Parse("127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kv      map[string]string
		key     string
		mention string
	}{
		{map[string]string{"serverAddress": ""}, "serverAddress", "required"},
		{map[string]string{"serverAddress": "prometheus:9090"}, "serverAddress", "http or https URL"},
		{map[string]string{"serverAddress": "http://u:p@prometheus.svc"}, "serverAddress", "without credentials"},
		{map[string]string{"serverAddress": "http://127.0.0.1:9090"}, "serverAddress", allow.EnvVar},
		{map[string]string{"serverAddress": "http://example.com"}, "serverAddress", "example.com"},
		{map[string]string{"replicaLabel": "pod-name"}, "replicaLabel", "label name"},
		{map[string]string{"selector": `job="x"} or vector(1) or up{a="b"`}, "selector", "label matchers"},
		{map[string]string{"queryTimeout": "5m"}, "queryTimeout", "duration"},
		{map[string]string{"activationMetric": "a-b"}, "activationMetric", "metric name"},
		{map[string]string{"cpuMetric": "c", "cpuQuery": "q"}, "cpuMetric", "set one or the other"},
		{map[string]string{"resourceQuery": "r", "memoryQuery": "m"}, "resourceQuery", "memoryQuery"},
		{map[string]string{"targets": "http://x.svc"}, "targets", "unknown key"},
		{map[string]string{"queueRunDurationMetric": "job_seconds", "runsQuery": "q"}, "queueRunDurationMetric", "runsQuery"},
		{map[string]string{"queueReadyMetric": "jobs-waiting"}, "queueReadyMetric", "metric name"},
	} {
		_, err := parseProm(t, nil, tc.kv)
		var me *keyschema.MetadataError
		if !errors.As(err, &me) || me.Key != tc.key || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: err = %v, want a MetadataError on %s mentioning %q", tc.kv, err, tc.key, tc.mention)
		}
	}
	// Loopback is reached once the list allows it explicitly.
	if _, err := parseProm(t, loopback, map[string]string{"serverAddress": "http://127.0.0.1:9090"}); err != nil {
		t.Errorf("allowed loopback refused: %v", err)
	}
}

func TestPrometheusKeyIsCanonical(t *testing.T) {
	key := func(kv map[string]string) string {
		spec, err := parseProm(t, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		return spec.Key()
	}
	base := key(nil)
	for _, same := range []map[string]string{
		{"serverAddress": "HTTP://Prometheus.Monitoring.svc:9090/"},
		{"activationQuery": exposition.Activations, "replicaLabel": "pod", "queryTimeout": "3000ms"},
	} {
		if k := key(same); k != base {
			t.Errorf("%v: key %s\nwant %s", same, k, base)
		}
	}
	for _, other := range []map[string]string{
		{"selector": `job="a"`}, {"replicaLabel": "instance"}, {"splitsInFlightQuery": "s"},
		{"serverAddress": "http://prometheus.monitoring.svc:9090/prefix"},
	} {
		if k := key(other); k == base {
			t.Errorf("%v: same key as the defaults", other)
		}
	}
}

// A query the server could not parse is refused when the trigger is read
// (GetMetricSpec's InvalidArgument), naming the key and what the parser
// said, rather than accepted and failing every sample afterwards.
func TestPrometheusQueriesAreParsed(t *testing.T) {
	for _, tt := range []struct{ key, query, says string }{
		{"replicasQuery", `up{job="shop"`, "unexpected end of input"},
		{"cpuQuery", `sum by (pod) (rate(cpu[1m])`, "unclosed left parenthesis"},
		{"resourceQuery", `max by (pod) (util) +`, "unexpected end of input"},
		{"timestampQuery", `rate(foo)`, "expected type range vector"},
		{"dueQuery", strings.Repeat("x", 300) + "{", "parse error"},
	} {
		_, err := parseProm(t, nil, map[string]string{tt.key: tt.query})
		var me *keyschema.MetadataError
		if !errors.As(err, &me) || me.Key != tt.key || !strings.Contains(me.Allowed, tt.says) || !strings.Contains(me.Allowed, "PromQL") {
			t.Errorf("%s=%q: err = %v, want key %s saying %q", tt.key, tt.query, err, tt.key, tt.says)
			continue
		}
		if len(err.Error()) > 400 {
			t.Errorf("%s: error of %d bytes: %s", tt.key, len(err.Error()), err)
		}
	}
	// What a server may enable behind a feature flag is left to it.
	for _, q := range []string{`limitk(2, up)`, `sort_by_label(up, "pod")`, `rate(up[5m+1m])`} {
		if _, err := parseProm(t, nil, map[string]string{"replicasQuery": q}); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
}

// Every default query, however the selector and the metric names shape it,
// is one the parser accepts: a template that broke would fail every sample.
func TestPrometheusDefaultQueriesParse(t *testing.T) {
	q := promsource.DefaultQueries(exposition.DefaultNames(), `job="shop",namespace=~"a|b"`, 2)
	for _, pq := range promQueries {
		if *pq.field(&q) == "" {
			continue // no default: the dimension is read only when its key is set
		}
		if _, why, ok := parsePromQL(*pq.field(&q), nil); !ok {
			t.Errorf("default %s = %q: %s", pq.key, *pq.field(&q), why)
		}
	}
}

// A trigger's short id names it in logs: its source and a prefix of its
// identity's hash, a few bytes however many queries the trigger carries,
// and apart for triggers sampled apart.
func TestShortID(t *testing.T) {
	s := trigger.NewSchema(Kind(nil, nil))
	long := strings.Repeat(`sum by (pod) (rate(http_requests_total{job="shop"}[1m])) + `, 30) + "1"
	a, err := s.Parse(map[string]string{"source": KindName, "serverAddress": promServer, "cpuQuery": long}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Parse(map[string]string{"source": KindName, "serverAddress": promServer}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []*trigger.Trigger{a, b} {
		id := tr.ShortID()
		hash, ok := strings.CutPrefix(id, "prometheus@")
		if !ok || len(hash) != 8 || !strings.Contains(tr.Identity(), "@"+hash) {
			t.Errorf("short id %q of identity ...%s", id, tr.Identity()[len(tr.Identity())-20:])
		}
	}
	if a.ShortID() == b.ShortID() {
		t.Errorf("triggers sampled apart share the short id %s", a.ShortID())
	}
}

// TestSettingsHideHeaderAndParameterValues: a custom header or query
// parameter may carry a credential despite the docs; Settings names them
// and never shows their values.
func TestSettingsHideHeaderAndParameterValues(t *testing.T) {
	s := trigger.NewSchema(Kind(nil, nil))
	got, err := s.Settings("", map[string]string{
		"source": "prometheus", "serverAddress": promServer,
		"customHeaders": "X-Api-Key=s3cret-token,X-Team=shop", "queryParameters": "api_key=s3cret-key",
	}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	for _, st := range got {
		if strings.Contains(st.Value, "s3cret") {
			t.Errorf("%s shows a secret: %q", st.Key, st.Value)
		}
		switch st.Key {
		case "customHeaders":
			seen++
			if st.Value != "X-Api-Key=…,X-Team=…" {
				t.Errorf("customHeaders: %q", st.Value)
			}
		case "queryParameters":
			seen++
			if st.Value != "api_key=…" {
				t.Errorf("queryParameters: %q", st.Value)
			}
		}
	}
	if seen != 2 {
		t.Errorf("customHeaders and queryParameters listed %d times, want 2", seen)
	}
}
