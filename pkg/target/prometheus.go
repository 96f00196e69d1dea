package target

import (
	"fmt"
	"log/slog"
	"math"
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

// promQuery ties a query key to its field and to the metric-name keys that
// shape its default: setting both is a contradiction, reported as such.
type promQuery struct {
	key     string
	field   func(*promsource.Queries) *string
	shapers []string
}

var promQueries = []promQuery{
	{"replicasQuery", func(q *promsource.Queries) *string { return &q.Replicas }, nil},
	{"activationQuery", func(q *promsource.Queries) *string { return &q.Activation }, []string{"activationMetric"}},
	{"cpuQuery", func(q *promsource.Queries) *string { return &q.CPU }, []string{"cpuMetric", "cpuLimitMetric", "cpuLimitCores"}},
	{"memoryQuery", func(q *promsource.Queries) *string { return &q.Memory }, []string{"memoryMetric"}},
	{"memoryLimitQuery", func(q *promsource.Queries) *string { return &q.MemoryLimit }, []string{"memoryLimitMetric"}},
	{"walStateQuery", func(q *promsource.Queries) *string { return &q.WalState }, []string{"walStateMetric"}},
	{"splitsInFlightQuery", func(q *promsource.Queries) *string { return &q.SplitsInFlight }, []string{"splitsMetric"}},
	{"treeRetainedBytesQuery", func(q *promsource.Queries) *string { return &q.TreeRetainedBytes }, []string{"treeRetainedBytesMetric"}},
	{"treeRetainedBytesCeilingQuery", func(q *promsource.Queries) *string { return &q.TreeRetainedBytesCeiling }, []string{"treeRetainedBytesCeilingMetric"}},
	{"treeSaturationQuery", func(q *promsource.Queries) *string { return &q.TreeSaturation }, []string{"treeSaturationMetric"}},
	{"partitionAccountQuery", func(q *promsource.Queries) *string { return &q.PartitionAccount }, []string{"partitionAccountMetric"}},
	{"arrivalsQuery", func(q *promsource.Queries) *string { return &q.Arrivals }, []string{"queueArrivalsMetric"}},
	{"runSecondsQuery", func(q *promsource.Queries) *string { return &q.RunSeconds }, []string{"queueRunDurationMetric"}},
	{"runsQuery", func(q *promsource.Queries) *string { return &q.Runs }, []string{"queueRunDurationMetric"}},
	{"readyQuery", func(q *promsource.Queries) *string { return &q.Ready }, []string{"queueReadyMetric"}},
	{"retryingQuery", func(q *promsource.Queries) *string { return &q.Retrying }, []string{"queueRetryingMetric"}},
	{"dueQuery", func(q *promsource.Queries) *string { return &q.Due }, []string{"queueDueMetric"}},
	{"busyQuery", func(q *promsource.Queries) *string { return &q.Busy }, []string{"queueBusyMetric"}},
	{"reservedQuery", func(q *promsource.Queries) *string { return &q.Reserved }, []string{"queueReservedMetric"}},
	{"reservationStartQuery", func(q *promsource.Queries) *string { return &q.ReservationStart }, []string{"queueReservationStartMetric"}},
	{"reservationEndQuery", func(q *promsource.Queries) *string { return &q.ReservationEnd }, []string{"queueReservationEndMetric"}},
	{"reservationSlotsQuery", func(q *promsource.Queries) *string { return &q.ReservationSlots }, []string{"queueReservationSlotsMetric"}},
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

// PrometheusParser returns the SourceParser of the prometheus source. The
// server address must pass list (nil means allow.Default()): its host where
// the metadata names it, and every address it resolves to when dialled.
//
// Keys and defaults: serverAddress (required); replicaLabel "pod"; selector
// "" (label matchers added to every default query); queryTimeout 3s; the
// contract's metric-name keys (activationMetric, cpuMetric, ...) and
// cpuLimitCores, which shape the default queries; and one query per
// dimension, each defaulting to promsource.DefaultQueries: replicasQuery
// (default none), activationQuery, resourceQuery (default none; replaces
// cpuQuery, memoryQuery and memoryLimitQuery), cpuQuery, memoryQuery,
// memoryLimitQuery, walStateQuery, splitsInFlightQuery,
// treeRetainedBytesQuery, treeRetainedBytesCeilingQuery,
// treeSaturationQuery, partitionAccountQuery, and the queue's arrivalsQuery,
// runSecondsQuery, runsQuery, readyQuery, retryingQuery, dueQuery,
// busyQuery, reservedQuery, reservationStartQuery, reservationEndQuery and
// reservationSlotsQuery (see docs/exposition.md for their defaults). A
// query and a metric-name key that shapes its default cannot both be set.
func PrometheusParser(list *allow.List) SourceParser {
	if list == nil {
		list = allow.Default()
	}
	return func(p *Params) (SourceSpec, error) { return parsePrometheus(p, list) }
}

func parsePrometheus(p *Params, list *allow.List) (SourceSpec, error) {
	spec := prometheusSpec{allow: list}
	var err error
	if spec.server, err = serverAddress(p, list); err != nil {
		return nil, err
	}
	spec.label = p.String("replicaLabel", promsource.DefaultReplicaLabel)
	if !model.LegacyValidation.IsValidLabelName(spec.label) {
		return nil, &MetadataError{Key: "replicaLabel", Value: spec.label, Allowed: "a Prometheus label name: letters, digits and '_', not starting with a digit"}
	}
	if spec.timeout, err = p.Duration("queryTimeout", promsource.DefaultQueryTimeout, 100*time.Millisecond, time.Minute); err != nil {
		return nil, err
	}
	if spec.queries, err = prometheusQueries(p); err != nil {
		return nil, err
	}
	return spec, nil
}

func serverAddress(p *Params, list *allow.List) (string, error) {
	raw, ok := p.Lookup("serverAddress")
	if !ok {
		return "", &MetadataError{Key: "serverAddress", Allowed: "required for source prometheus: the server's URL, such as http://prometheus.monitoring.svc:9090"}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", &MetadataError{Key: "serverAddress", Value: raw, Allowed: "an http or https URL such as http://prometheus.monitoring.svc:9090, without credentials, query or fragment"}
	}
	if err := list.Host(u.Hostname()); err != nil {
		return "", &MetadataError{Key: "serverAddress", Value: raw, Allowed: err.Error()}
	}
	// Case and a trailing slash do not change the server.
	u.Scheme, u.Host, u.Path = strings.ToLower(u.Scheme), strings.ToLower(u.Host), strings.TrimRight(u.Path, "/")
	return u.String(), nil
}

// prometheusQueries resolves every query: an explicit query, else the
// default shaped by the selector and the metric-name keys.
func prometheusQueries(p *Params) (promsource.Queries, error) {
	selector := p.String("selector", "")
	if selector != "" && !selectorPattern.MatchString(selector) {
		return promsource.Queries{}, &MetadataError{Key: "selector", Value: selector, Allowed: `PromQL label matchers without braces, such as job="shop",namespace="prod"`}
	}
	cores, err := p.Float("cpuLimitCores", 0, 0, math.Inf(1))
	if err != nil {
		return promsource.Queries{}, err
	}
	set := map[string]bool{"cpuLimitCores": cores > 0}
	names := exposition.DefaultNames()
	for _, o := range names.Overrides() {
		v, ok := p.Lookup(o.Key)
		if !ok {
			continue
		}
		if !model.LegacyValidation.IsValidMetricName(v) {
			return promsource.Queries{}, &MetadataError{Key: o.Key, Value: v, Allowed: "a Prometheus metric name"}
		}
		*o.Name, set[o.Key] = v, true
	}
	q := promsource.DefaultQueries(names, selector, cores)
	for _, pq := range promQueries {
		v, ok := p.Lookup(pq.key)
		if !ok {
			continue
		}
		for _, s := range pq.shapers {
			if set[s] {
				return q, &MetadataError{Key: s, Allowed: fmt.Sprintf("only shapes the default %s; it has no effect with %s set, so set one or the other", pq.key, pq.key)}
			}
		}
		*pq.field(&q), set[pq.key] = v, true
	}
	return resourceQuery(p, q, set)
}

// resourceQuery applies resourceQuery, which stands for the whole resource
// dimension and so replaces the cpu and memory queries and their shapers.
func resourceQuery(p *Params, q promsource.Queries, set map[string]bool) (promsource.Queries, error) {
	v, ok := p.Lookup("resourceQuery")
	if !ok {
		return q, nil
	}
	for _, k := range []string{"cpuQuery", "memoryQuery", "memoryLimitQuery", "cpuMetric", "cpuLimitMetric", "cpuLimitCores", "memoryMetric", "memoryLimitMetric"} {
		if set[k] {
			return q, &MetadataError{Key: "resourceQuery", Value: v, Allowed: "replaces the cpu and memory queries; it cannot be combined with " + k}
		}
	}
	q.Resource, q.CPU, q.Memory, q.MemoryLimit = v, "", "", ""
	return q, nil
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
