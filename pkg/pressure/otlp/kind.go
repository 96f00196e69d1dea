package otlp

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
)

// KindName is the source kind that reads what the replicas push over
// OTLP to the scaler's receiver.
const KindName = "otlp"

// keyResourceSelector is the otlp source's workload selector. It is not
// `selector`, the prometheus source's PromQL matchers: a key several
// sources read is one key with one meaning.
const keyResourceSelector = "resourceSelector"

// keyPoolService names the Service whose ready pods are the pool.
const keyPoolService = "poolService"

// Kind is the otlp source kind, reading st, the scaler's one OTLP store
// (shared with the receiver that writes it). A nil st is a scaler whose
// receiver is off: the kind's keys are documented, and a trigger naming it
// is refused saying so. pods reads a poolService's EndpointSlices; nil
// (no Kubernetes) refuses the key.
//
// The namespace a source reads is always its ScaledObject's own, never a
// metadata value: a trigger cannot read what another namespace pushed.
func Kind(st *store.Store, pods discovery.Discovery) sourcekind.Kind {
	opts := store.DefaultOptions()
	if st != nil {
		opts = st.Options()
	}
	// The store keeps HistoryPoints at least HistoryResolution apart, so
	// it always covers this span (the source checks it too).
	covered := time.Duration(opts.HistoryPoints-1) * opts.HistoryResolution
	keys := []keyschema.Key[otlpConfig]{
		keyschema.Text(keyResourceSelector, func(c *otlpConfig) *map[string]string { return &c.selector }, nil,
			"attribute=value pairs separated by ',', each attribute one of "+strings.Join(store.WorkloadAttributes, ", "),
			parseResourceSelector, keyschema.PairsText).Require().
			Describe("the workload whose pushes are read, by the resource attributes its replicas push, such as `k8s.deployment.name=shop` (every pair must match); only what was pushed for the ScaledObject's own namespace (`k8s.namespace.name`) is read"),
		keyschema.Duration("window", func(c *otlpConfig) *time.Duration { return &c.window }, DefaultWindow, time.Second, covered, false).
			Describe("the span a pushed counter's rate (CPU seconds) and a histogram's mean are read over, back from its newest point"),
		keyschema.Duration("maxAge", func(c *otlpConfig) *time.Duration { return &c.maxAge }, DefaultMaxAge, time.Second, opts.Retention, false).
			Describe("a replica whose newest point is older is left out of the sample and named in its reason (it stopped pushing); set it to a few export intervals"),
		keyschema.String(keyPoolService, func(c *otlpConfig) *string { return &c.poolService }, "",
			"the name of a Service of the ScaledObject's namespace (lower-case letters, digits and '-', starting with a letter, at most 63 bytes)", validServiceName).
			Describe("a Service whose EndpointSlices list the workload's pods: the ready ones are the pool, and a sample waits for each to push (at most `maxAge` after it turned ready, then names it missing) instead of reading the replicas heard so far as the whole pool; starting and terminating pods are named, not read, as `k8s://` scrape targets' are. Needs the scaler's Kubernetes access (docs/otlp.md, \"The pool's size\")"),
		sourcekind.CPULimitCoresKey(func(c *otlpConfig) *float64 { return &c.cores }),
	}
	keys = append(keys, exposition.NameKeys(func(c *otlpConfig) *exposition.Names { return &c.names },
		"a metric name: valid UTF-8, at most 200 bytes",
		func(s string) bool { return len(s) <= 200 && model.UTF8Validation.IsValidMetricName(s) })...)
	return sourcekind.New(KindName, "reads the pressure exposition contract that the replicas push over OTLP to the scaler's receiver (docs/otlp.md)",
		func() otlpConfig { return otlpConfig{} }, keys,
		[]keyschema.Check[otlpConfig]{
			func(c *otlpConfig, _ *keyschema.Context, _ func(string) bool) error {
				return exposition.CheckUniqueNames(c.names)
			},
			func(c *otlpConfig, ctx *keyschema.Context, _ func(string) bool) error {
				if st == nil {
					return &keyschema.MetadataError{Key: "source", Value: KindName,
						Allowed: "a source this scaler serves: its OTLP receiver is off (set BAROMETER_OTLP_GRPC_ADDR or BAROMETER_OTLP_HTTP_ADDR)"}
				}
				if ctx.Namespace == "" {
					return &keyschema.MetadataError{Key: "source", Value: KindName,
						Allowed: "a source that names no namespace: otlp reads its ScaledObject's namespace, and the scaler's own default target has none"}
				}
				c.namespace = ctx.Namespace
				return nil
			},
			func(c *otlpConfig, _ *keyschema.Context, _ func(string) bool) error {
				if c.poolService != "" && pods == nil {
					return &keyschema.MetadataError{Key: keyPoolService, Value: c.poolService,
						Allowed: "a Service only where the scaler reads Kubernetes (in a pod with the chart's kubernetes.enabled, or BAROMETER_KUBECONFIG); leave it out otherwise"}
				}
				return nil
			},
		},
		func(c otlpConfig) (sourcekind.Spec, error) {
			cfg := Config{
				Namespace: c.namespace, Selector: c.selector, Window: c.window, MaxAge: c.maxAge,
				Names: c.names, CPULimitCores: c.cores, PoolService: c.poolService,
			}
			if st != nil {
				cfg.HeldSince = st.HeldSince
			}
			if c.poolService != "" {
				cfg.Pool = pods
			}
			return otlpSpec{store: st, cfg: cfg}, nil
		})
}

// otlpConfig is an otlp trigger's keys, and the namespace it reads.
type otlpConfig struct {
	namespace   string
	selector    map[string]string
	window      time.Duration
	maxAge      time.Duration
	cores       float64
	names       exposition.Names
	poolService string
}

// validServiceName is a Service's name: a DNS label starting with a
// letter.
func validServiceName(s string, _ *keyschema.Context) bool {
	if s == "" || len(s) > 63 || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' })
}

// parseResourceSelector reads the selector's pairs, each naming a
// workload attribute the store records, with a value.
func parseResourceSelector(s string, c *keyschema.Context) (map[string]string, string, bool) {
	pairs, why, ok := keyschema.ParsePairs(s, c)
	if !ok {
		return nil, why, false
	}
	for k, v := range pairs {
		if !slices.Contains(store.WorkloadAttributes, k) {
			return nil, keyschema.Quote(k) + " is not a workload attribute; allowed: " + strings.Join(store.WorkloadAttributes, ", "), false
		}
		if v == "" {
			return nil, keyschema.Quote(k) + " has no value; each attribute needs one", false
		}
	}
	return pairs, "", true
}

// otlpSpec is the parsed configuration of an otlp source.
type otlpSpec struct {
	store *store.Store
	cfg   Config
}

// Key names the namespace and the selector, and hashes every resolved
// setting: the same selector in two namespaces reads two different sets of
// pushes, and the key stays short.
func (s otlpSpec) Key() string {
	var b strings.Builder
	c := s.cfg
	fmt.Fprintf(&b, "window=%s maxAge=%s cpuLimitCores=%g", c.Window, c.MaxAge, c.CPULimitCores)
	if c.PoolService != "" {
		fmt.Fprintf(&b, " %s=%q", keyPoolService, c.PoolService)
	}
	for _, n := range c.Names.Overrides() {
		fmt.Fprintf(&b, " %s=%q", n.Key, *n.Name)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return fmt.Sprintf("otlp namespace=%s %s=%q #%x", c.Namespace, keyResourceSelector, keyschema.PairsText(c.Selector), sum[:8])
}

func (s otlpSpec) New(logger *slog.Logger) (pressure.Source, error) {
	return New(s.store, s.cfg, logger)
}
