// Package promkind is the prometheus source kind (sourcekind.Kind): the
// keys a trigger with source: prometheus is written in, their checks, and
// the spec that builds a promsource.Source from them. It sits beside the
// source rather than in it because the source's own package is the
// reading (queries, folds, the past), which a trigger's language does not
// need to see.
package promkind

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promclient"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
)

// KindName is the source kind that asks a Prometheus server.
const KindName = "prometheus"

// The keys the checks between keys name.
const (
	keyServerAddress   = "serverAddress"
	keyQueryParameters = "queryParameters"
	keyCustomHeaders   = "customHeaders"
)

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
	pool     *querypool.Pool

	align time.Duration // the sample interval, which evaluation instants align to

	profiles *connprofile.Set
	profile  string // the connectionProfile key
	resolved *connprofile.Profile
	params   map[string]string
	headers  map[string]string
	// keepNulls is ignoreNullValues: an empty answer reads as described
	// in docs/prometheus.md rather than failing the sample.
	keepNulls bool
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
	{"cpuQuery", func(q *promsource.Queries) *string { return &q.CPU }, []string{"cpuMetric", "cpuLimitMetric", sourcekind.KeyCPULimitCores}, "CPU use over its limit"},
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
	{"timestampQuery", func(q *promsource.Queries) *string { return &q.Timestamp }, []string{"activationMetric"}, "the newest sample's time per replica, read as the data's age"},
}

// resourceReplaces are the keys resourceQuery stands in for.
var resourceReplaces = []string{"cpuQuery", "memoryQuery", "memoryLimitQuery", "cpuMetric", "cpuLimitMetric", sourcekind.KeyCPULimitCores, "memoryMetric", "memoryLimitMetric"}

// Prometheus is the prometheus source kind. The server address must pass
// list (nil means allow.Default()): its host where the metadata names it,
// and every address it resolves to when dialled. profiles are the
// connection profiles a trigger may reach its server through (nil: none).
// Every source of the kind queries through one querypool.Pool: pool, the
// one the process registers its metrics from, else one of the kind's own
// (an optional argument, so callers with no metrics pass none).
func Kind(list *allow.List, profiles *connprofile.Set, pool ...*querypool.Pool) sourcekind.Kind {
	if list == nil {
		list = allow.Default()
	}
	shared := querypool.New(0)
	if len(pool) > 0 && pool[0] != nil {
		shared = pool[0]
	}
	keys := []keyschema.Key[promConfig]{
		connprofile.Key(func(c *promConfig) *string { return &c.profile }),
		keyschema.Text(keyServerAddress, func(c *promConfig) *string { return &c.server }, "",
			"an http or https URL such as http://prometheus.monitoring.svc:9090, without credentials, query or fragment",
			func(s string, _ *keyschema.Context) (string, string, bool) { return serverAddress(s) }, quoted).
			Documented("(required; a connection profile's `url`)").
			Describe("the server's URL, such as `http://prometheus.monitoring.svc:9090`"),
		keyschema.String("replicaLabel", func(c *promConfig) *string { return &c.label }, promsource.DefaultReplicaLabel,
			"a Prometheus label name: letters, digits and '_', not starting with a digit",
			func(s string, _ *keyschema.Context) bool { return model.LegacyValidation.IsValidLabelName(s) }).
			Describe("the label that names a replica"),
		keyschema.String("selector", func(c *promConfig) *string { return &c.selector }, "",
			`PromQL label matchers without braces, such as job="shop",namespace="prod"`,
			func(s string, _ *keyschema.Context) bool { return selectorPattern.MatchString(s) }).Documented("(none)").
			Describe("label matchers added to every default query, such as `job=\"shop\"`"),
		keyschema.Duration("queryTimeout", func(c *promConfig) *time.Duration { return &c.timeout }, 0, 100*time.Millisecond, time.Minute, false).
			Documented("`3s`, or the connection profile's").
			Describe("bound of one sample's queries; a connection profile's time-out also caps it"),
		keyschema.Text(keyQueryParameters, func(c *promConfig) *map[string]string { return &c.params }, nil,
			"name=value pairs separated by ','", keyschema.ParsePairs, keyschema.PairsText).Documented("(none)").
			ShowAs(func(c *promConfig) string { return keyschema.PairNames(c.params) }).
			Describe("added to every query's URL, as KEDA's prometheus scaler does (Thanos' `dedup=false`, say); not the query API's own parameters"),
		keyschema.Text(keyCustomHeaders, func(c *promConfig) *map[string]string { return &c.headers }, nil,
			"Name=value pairs separated by ','", keyschema.ParsePairs, keyschema.PairsText).Documented("(none)").
			ShowAs(func(c *promConfig) string { return keyschema.PairNames(c.headers) }).
			Describe("sent with every query; not secret (credentials belong in a connection profile), and never the profile's tenant header"),
		keyschema.Bool("ignoreNullValues", func(c *promConfig) *bool { return &c.keepNulls }, true).
			Describe("`true`: an empty answer reads as docs/prometheus.md says (a dimension with no series is 0); `false`: an empty replicas, activation, resource, cpu or memory query fails the sample, so the signal goes stale and KEDA's fallback applies"),
		sourcekind.CPULimitCoresKey(func(c *promConfig) *float64 { return &c.cores }),
	}
	keys = append(keys, exposition.NameKeys(func(c *promConfig) *exposition.Names { return &c.names },
		"a Prometheus metric name", model.LegacyValidation.IsValidMetricName)...)
	queries := keyschema.Group{Name: "queries", Doc: "one PromQL query per dimension (see docs/exposition.md for their defaults)"}
	for _, q := range promQueries {
		keys = append(keys, queryKey(q.key, func(c *promConfig) *string { return q.field(&c.explicit) }).
			Documented("built from the contract's names").Describe(q.doc).InGroup(queries))
	}
	keys = append(keys, queryKey("resourceQuery", func(c *promConfig) *string { return &c.resource }).
		Documented("(none)").Describe("a ready 0..1 per replica; replaces the CPU and memory queries"))
	return sourcekind.New(KindName, "asks a Prometheus server that already scrapes the workload",
		func() promConfig { return promConfig{allow: list, profiles: profiles, pool: shared} }, keys,
		[]keyschema.Check[promConfig]{checkShapers, checkResource, resolveProfile, checkRequest},
		func(c promConfig) (sourcekind.Spec, error) { return c.spec(), nil })
}

func quoted(s string) string { return fmt.Sprintf("%q", s) }

// queryKey declares a key whose value is a PromQL query, kept as written
// once Prometheus' parser accepts it.
func queryKey(name string, f keyschema.Field[promConfig, string]) keyschema.Key[promConfig] {
	k := keyschema.Text(name, f, "", "a PromQL query", parsePromQL, quoted)
	k.Default = ""
	return k
}

// maxParseMessage bounds how much of the parser's message an error
// repeats: its position and what it expected, not a long identifier.
const maxParseMessage = 160

// parsePromQL accepts a query Prometheus' own parser reads, and says what
// the parser found wrong with one it does not (its first error only). The
// parser has every feature a server may enable behind a flag: the parse
// here refuses what no server could run (a syntax or type error), while
// whether a feature is switched on is the server's to say, on the first
// sample.
func parsePromQL(s string, _ *keyschema.Context) (string, string, bool) {
	_, err := parser.NewParser(parser.Options{
		EnableExperimentalFunctions:  true,
		ExperimentalDurationExpr:     true,
		EnableExtendedRangeSelectors: true,
		EnableBinopFillModifiers:     true,
	}).ParseExpr(s)
	if err == nil {
		return s, "", true
	}
	msg := err.Error()
	var errs parser.ParseErrors
	if errors.As(err, &errs) && len(errs) > 0 {
		msg = errs[0].Error()
	}
	if len(msg) > maxParseMessage {
		cut := maxParseMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return "", "a PromQL query; Prometheus' parser says " + strconv.Quote(msg), false
}

// serverAddress reads and normalises the server's URL. Whether it may be
// reached is resolveProfile's to say: a connection profile that covers it
// admits it, otherwise the allow-list must.
func serverAddress(raw string) (string, string, bool) {
	const allowed = "an http or https URL such as http://prometheus.monitoring.svc:9090, without credentials, query or fragment"
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", allowed, false
	}
	// Case and a trailing slash do not change the server.
	u.Scheme, u.Host, u.Path = strings.ToLower(u.Scheme), strings.ToLower(u.Host), strings.TrimRight(u.Path, "/")
	return u.String(), "", true
}

// resolveProfile picks the trigger's connection profile: the one it names,
// or the one its server address matches; with none named, the server
// address is required.
func resolveProfile(c *promConfig, ctx *keyschema.Context, _ func(string) bool) error {
	p, err := c.profiles.Resolve(c.profile, c.server, ctx.Namespace)
	if err != nil {
		return connprofile.MetadataError(err)
	}
	c.resolved = p
	c.align = ctx.Interval
	if p == nil && c.server != "" {
		// No profile covers the server: the allow-list decides, for the
		// ScaledObject's namespace. A profile's server was admitted by
		// the operator who wrote the profile, for the namespaces it lists.
		u, _ := url.Parse(c.server) // serverAddress parsed it
		if err := c.allow.HostIn(ctx.Namespace, u.Hostname()); err != nil {
			return &keyschema.MetadataError{Key: keyServerAddress, Value: c.server, Allowed: err.Error()}
		}
	}
	if c.timeout == 0 {
		c.timeout = promclient.DefaultQueryTimeout
		if p != nil && p.Timeout() > 0 {
			c.timeout = p.Timeout()
		}
	}
	if c.server == "" {
		if p == nil || p.URL() == "" {
			return &keyschema.MetadataError{Key: keyServerAddress, Allowed: "required for source prometheus: the server's URL, such as http://prometheus.monitoring.svc:9090, unless a connection profile with a url is named"}
		}
		c.server = p.URL()
	}
	return nil
}

// checkRequest refuses query parameters and headers the source would.
func checkRequest(c *promConfig, _ *keyschema.Context, _ func(string) bool) error {
	tenant := ""
	if c.resolved != nil {
		tenant = c.resolved.TenantHeader()
	}
	if err := promclient.CheckRequest(c.params, nil, tenant); err != nil {
		return &keyschema.MetadataError{Key: keyQueryParameters, Allowed: err.Error()}
	}
	if err := promclient.CheckRequest(nil, c.headers, tenant); err != nil {
		return &keyschema.MetadataError{Key: keyCustomHeaders, Allowed: err.Error()}
	}
	return nil
}

// checkShapers refuses a query set beside a key that only shapes its
// default.
func checkShapers(c *promConfig, _ *keyschema.Context, set func(string) bool) error {
	for _, q := range promQueries {
		if !set(q.key) {
			continue
		}
		for _, s := range q.shapers {
			if set(s) && (s != sourcekind.KeyCPULimitCores || c.cores > 0) {
				return &keyschema.MetadataError{Key: s, Allowed: fmt.Sprintf("only shapes the default %s; it has no effect with %s set, so set one or the other", q.key, q.key)}
			}
		}
	}
	return nil
}

// checkResource: resourceQuery stands for the whole resource dimension,
// so it cannot be combined with the CPU and memory queries or their
// shapers.
func checkResource(c *promConfig, _ *keyschema.Context, set func(string) bool) error {
	if c.resource == "" {
		return nil
	}
	for _, k := range resourceReplaces {
		if set(k) && (k != sourcekind.KeyCPULimitCores || c.cores > 0) {
			return &keyschema.MetadataError{Key: "resourceQuery", Value: c.resource, Allowed: "replaces the cpu and memory queries; it cannot be combined with " + k}
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
	return prometheusSpec{server: c.server, label: c.label, timeout: c.timeout, queries: q, allow: c.allow,
		profile: c.resolved, params: c.params, headers: c.headers, failOnEmpty: !c.keepNulls, align: c.align, pool: c.pool}
}

// prometheusSpec is the parsed configuration of a prometheus source: every
// default resolved, so Key compares meanings, not spellings.
type prometheusSpec struct {
	server      string
	label       string
	timeout     time.Duration
	queries     promsource.Queries
	allow       *allow.List
	profile     *connprofile.Profile
	params      map[string]string
	headers     map[string]string
	failOnEmpty bool
	align       time.Duration
	pool        *querypool.Pool // shared by the kind's sources; not part of the Key
}

// Key names the server and hashes every resolved setting in a fixed
// order, so two ScaledObjects that mean the same server and queries share
// one sampler, and the key stays short (the queries are thousands of
// bytes) and says nothing of a header's or parameter's value.
func (s prometheusSpec) Key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "prometheus server=%q replicaLabel=%q queryTimeout=%s", s.server, s.label, s.timeout)
	q := s.queries
	for _, pq := range promQueries {
		fmt.Fprintf(&b, " %s=%q", pq.key, *pq.field(&q))
	}
	fmt.Fprintf(&b, " resourceQuery=%q", q.Resource)
	if s.profile != nil {
		fmt.Fprintf(&b, " connectionProfile=%q", s.profile.Name())
	}
	fmt.Fprintf(&b, " queryParameters=%q customHeaders=%q ignoreNullValues=%t", keyschema.PairsText(s.params), keyschema.PairsText(s.headers), !s.failOnEmpty)
	sum := sha256.Sum256([]byte(b.String()))
	return fmt.Sprintf("prometheus %s #%x", s.server, sum[:8])
}

func (s prometheusSpec) New(logger *slog.Logger) (pressure.Source, error) {
	return promsource.New(promsource.Options{
		ServerAddress:   s.server,
		Queries:         s.queries,
		ReplicaLabel:    s.label,
		QueryTimeout:    s.timeout,
		Control:         s.allow.Control,
		Profile:         s.profile,
		QueryParameters: s.params,
		CustomHeaders:   s.headers,
		FailOnEmpty:     s.failOnEmpty,
		Align:           s.align,
		Pool:            s.pool,
		Logger:          logger,
	})
}
