package trigger

import (
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource"
)

// SourcePrometheus is the source kind that asks a Prometheus server.
const SourcePrometheus = "prometheus"

// selectorPattern accepts a list of PromQL label matchers and nothing else,
// so a selector cannot close the braces it is put between and smuggle in
// another expression.
var selectorPattern = regexp.MustCompile(`^\s*` + matcher + `(\s*,\s*` + matcher + `)*\s*,?\s*$`)

const matcher = `[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"([^"\\]|\\.)*"`

// promConfig is a prometheus trigger's keys: the explicit queries, and
// what shapes the default ones.
type promConfig struct {
	server   string
	label    string
	timeout  time.Duration
	selector string
	cores    float64
	names    exposition.Names
	explicit promsource.Queries // "" where the default applies
	resource string
	allow    *allow.List
}

// promQuery ties a query key to its field and to the keys that shape its
// default: setting both is a contradiction, reported as such.
type promQuery struct {
	key     string
	field   func(*promsource.Queries) *string
	shapers []string
	doc     string
}

var promQueries = []promQuery{
	{"replicasQuery", func(q *promsource.Queries) *string { return &q.Replicas }, nil, "the replicas that exist; a series with value 0 is a missing replica"},
	{"activationQuery", func(q *promsource.Queries) *string { return &q.Activation }, []string{"activationMetric"}, "the activation dimension"},
	{"cpuQuery", func(q *promsource.Queries) *string { return &q.CPU }, []string{"cpuMetric", "cpuLimitMetric", "cpuLimitCores"}, "CPU use over its limit"},
	{"memoryQuery", func(q *promsource.Queries) *string { return &q.Memory }, []string{"memoryMetric"}, "memory in use"},
	{"memoryLimitQuery", func(q *promsource.Queries) *string { return &q.MemoryLimit }, []string{"memoryLimitMetric"}, "the memory ceiling"},
	{"walStateQuery", func(q *promsource.Queries) *string { return &q.WalState }, []string{"walStateMetric"}, "the WAL state"},
	{"splitsInFlightQuery", func(q *promsource.Queries) *string { return &q.SplitsInFlight }, []string{"splitsMetric"}, "splits in flight"},
	{"treeRetainedBytesQuery", func(q *promsource.Queries) *string { return &q.TreeRetainedBytes }, []string{"treeRetainedBytesMetric"}, "the storage axis"},
	{"treeRetainedBytesCeilingQuery", func(q *promsource.Queries) *string { return &q.TreeRetainedBytesCeiling }, []string{"treeRetainedBytesCeilingMetric"}, "the storage axis"},
	{"treeSaturationQuery", func(q *promsource.Queries) *string { return &q.TreeSaturation }, []string{"treeSaturationMetric"}, "the storage axis"},
	{"partitionAccountQuery", func(q *promsource.Queries) *string { return &q.PartitionAccount }, []string{"partitionAccountMetric"}, "the storage axis"},
	{"arrivalsQuery", func(q *promsource.Queries) *string { return &q.Arrivals }, []string{"queueArrivalsMetric"}, "the work queue"},
	{"runSecondsQuery", func(q *promsource.Queries) *string { return &q.RunSeconds }, []string{"queueRunDurationMetric"}, "the work queue"},
	{"runsQuery", func(q *promsource.Queries) *string { return &q.Runs }, []string{"queueRunDurationMetric"}, "the work queue"},
	{"readyQuery", func(q *promsource.Queries) *string { return &q.Ready }, []string{"queueReadyMetric"}, "the work queue"},
	{"retryingQuery", func(q *promsource.Queries) *string { return &q.Retrying }, []string{"queueRetryingMetric"}, "the work queue"},
	{"dueQuery", func(q *promsource.Queries) *string { return &q.Due }, []string{"queueDueMetric"}, "the work queue"},
	{"busyQuery", func(q *promsource.Queries) *string { return &q.Busy }, []string{"queueBusyMetric"}, "the work queue"},
	{"reservedQuery", func(q *promsource.Queries) *string { return &q.Reserved }, []string{"queueReservedMetric"}, "the work queue"},
	{"reservationStartQuery", func(q *promsource.Queries) *string { return &q.ReservationStart }, []string{"queueReservationStartMetric"}, "the work queue"},
	{"reservationEndQuery", func(q *promsource.Queries) *string { return &q.ReservationEnd }, []string{"queueReservationEndMetric"}, "the work queue"},
	{"reservationSlotsQuery", func(q *promsource.Queries) *string { return &q.ReservationSlots }, []string{"queueReservationSlotsMetric"}, "the work queue"},
}

// resourceReplaces are the keys resourceQuery stands in for.
var resourceReplaces = []string{"cpuQuery", "memoryQuery", "memoryLimitQuery", "cpuMetric", "cpuLimitMetric", "cpuLimitCores", "memoryMetric", "memoryLimitMetric"}

// Prometheus is the prometheus source kind. The server address must pass
// list (nil means allow.Default()): its host where the metadata names it,
// and every address it resolves to when dialled.
func Prometheus(list *allow.List) Kind {
	if list == nil {
		list = allow.Default()
	}
	keys := []Key[promConfig]{
		Text("serverAddress", func(c *promConfig) *string { return &c.server }, "",
			"an http or https URL such as http://prometheus.monitoring.svc:9090, without credentials, query or fragment",
			func(s string, _ *Context) (string, string, bool) { return serverAddress(s, list) }, quoted).Require().
			Describe("the server's URL, such as `http://prometheus.monitoring.svc:9090`"),
		String("replicaLabel", func(c *promConfig) *string { return &c.label }, promsource.DefaultReplicaLabel,
			"a Prometheus label name: letters, digits and '_', not starting with a digit",
			func(s string, _ *Context) bool { return model.LegacyValidation.IsValidLabelName(s) }).
			Describe("the label that names a replica"),
		String("selector", func(c *promConfig) *string { return &c.selector }, "",
			`PromQL label matchers without braces, such as job="shop",namespace="prod"`,
			func(s string, _ *Context) bool { return selectorPattern.MatchString(s) }).Documented("(none)").
			Describe("label matchers added to every default query, such as `job=\"shop\"`"),
		Duration("queryTimeout", func(c *promConfig) *time.Duration { return &c.timeout }, promsource.DefaultQueryTimeout, 100*time.Millisecond, time.Minute, false).
			Describe("bound of one sample's queries"),
		cpuLimitCoresKey(func(c *promConfig) *float64 { return &c.cores }),
	}
	keys = append(keys, metricNameKeys(func(c *promConfig) *exposition.Names { return &c.names },
		"a Prometheus metric name", model.LegacyValidation.IsValidMetricName)...)
	for _, q := range promQueries {
		k := String(q.key, func(c *promConfig) *string { return q.field(&c.explicit) }, "", "a PromQL query", nil).
			Documented("built from the contract's names").Describe(q.doc)
		k.Info.Group = "queries"
		keys = append(keys, k)
	}
	keys = append(keys, String("resourceQuery", func(c *promConfig) *string { return &c.resource }, "", "a PromQL query", nil).
		Documented("(none)").Describe("a ready 0..1 per replica; replaces the CPU and memory queries"))
	return NewKind(SourcePrometheus, "asks a Prometheus server that already scrapes the workload",
		func() promConfig { return promConfig{allow: list} }, keys,
		[]Check[promConfig]{checkShapers, checkResource},
		func(c promConfig) (SourceSpec, error) { return c.spec(), nil })
}

func quoted(s string) string { return fmt.Sprintf("%q", s) }

func serverAddress(raw string, list *allow.List) (string, string, bool) {
	const allowed = "an http or https URL such as http://prometheus.monitoring.svc:9090, without credentials, query or fragment"
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", allowed, false
	}
	if err := list.Host(u.Hostname()); err != nil {
		return "", err.Error(), false
	}
	// Case and a trailing slash do not change the server.
	u.Scheme, u.Host, u.Path = strings.ToLower(u.Scheme), strings.ToLower(u.Host), strings.TrimRight(u.Path, "/")
	return u.String(), "", true
}

// checkShapers refuses a query set beside a key that only shapes its
// default.
func checkShapers(c *promConfig, set func(string) bool) error {
	for _, q := range promQueries {
		if !set(q.key) {
			continue
		}
		for _, s := range q.shapers {
			if set(s) && (s != "cpuLimitCores" || c.cores > 0) {
				return &MetadataError{Key: s, Allowed: fmt.Sprintf("only shapes the default %s; it has no effect with %s set, so set one or the other", q.key, q.key)}
			}
		}
	}
	return nil
}

// checkResource: resourceQuery stands for the whole resource dimension,
// so it cannot be combined with the CPU and memory queries or their
// shapers.
func checkResource(c *promConfig, set func(string) bool) error {
	if c.resource == "" {
		return nil
	}
	for _, k := range resourceReplaces {
		if set(k) && (k != "cpuLimitCores" || c.cores > 0) {
			return &MetadataError{Key: "resourceQuery", Value: c.resource, Allowed: "replaces the cpu and memory queries; it cannot be combined with " + k}
		}
	}
	return nil
}

// spec resolves every query: an explicit one, else the default shaped by
// the selector and the metric-name keys.
func (c promConfig) spec() prometheusSpec {
	q := promsource.DefaultQueries(c.names, c.selector, c.cores)
	for _, pq := range promQueries {
		if v := *pq.field(&c.explicit); v != "" {
			*pq.field(&q) = v
		}
	}
	if c.resource != "" {
		q.Resource, q.CPU, q.Memory, q.MemoryLimit = c.resource, "", "", ""
	}
	return prometheusSpec{server: c.server, label: c.label, timeout: c.timeout, queries: q, allow: c.allow}
}

// prometheusSpec is the parsed configuration of a prometheus source: every
// default resolved, so Key compares meanings, not spellings.
type prometheusSpec struct {
	server  string
	label   string
	timeout time.Duration
	queries promsource.Queries
	allow   *allow.List
}

// Key lists every resolved setting in a fixed order, so two ScaledObjects
// that mean the same server and queries share one sampler.
func (s prometheusSpec) Key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "prometheus server=%q replicaLabel=%q queryTimeout=%s", s.server, s.label, s.timeout)
	q := s.queries
	for _, pq := range promQueries {
		fmt.Fprintf(&b, " %s=%q", pq.key, *pq.field(&q))
	}
	fmt.Fprintf(&b, " resourceQuery=%q", q.Resource)
	return b.String()
}

func (s prometheusSpec) New(logger *slog.Logger) (pressure.Source, error) {
	return promsource.New(promsource.Options{
		ServerAddress: s.server,
		Queries:       s.queries,
		ReplicaLabel:  s.label,
		QueryTimeout:  s.timeout,
		Control:       s.allow.Control,
		Logger:        logger,
	})
}
