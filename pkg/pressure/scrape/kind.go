package scrape

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/target"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
)

// KindName is the source kind that scrapes the replicas directly.
const KindName = "scrape"

// MaxScrapeTargets bounds the targets key: each static target is a replica
// scraped every sample, and a DNS target may expand to many more.
const MaxScrapeTargets = 1000

// keyVictimHints is named by the check that refuses it where it cannot work.
const keyVictimHints = "victimHints"

// Scrape is the scrape source kind. Every target must pass list (nil means
// allow.Default()): its host where the metadata names it, and, through the
// source, every address a DNS target expands to and every address dialled.
//
// profiles are the connection profiles a trigger may reach its replicas
// through (nil: none); kube is the scaler's access to Kubernetes, which
// k8s:// targets need.
//
// Every source of the kind scrapes through one Exchange, so targets
// naming the same replica the same way scrape it once per instant.
func Kind(list *allow.List, profiles *connprofile.Set, kube Kube) sourcekind.Kind {
	if list == nil {
		list = allow.Default()
	}
	exchange := NewExchange(ExchangeOptions{})
	keys := []keyschema.Key[scrapeConfig]{
		connprofile.Key(func(c *scrapeConfig) *string { return &c.profile }),
		keyschema.Text("targets", func(c *scrapeConfig) *[]target.Target { return &c.opts.Targets }, nil,
			"comma-separated http://, https://, dns+http:// or k8s:// URLs", func(s string, c *keyschema.Context) ([]target.Target, string, bool) {
				return scrapeTargets(s, list, c.Namespace, kube)
			}, targetsText).Require().
			Describe("comma-separated `http://`, `https://`, `dns+http://name:port/path` or `k8s://service:port/path` URLs; a `dns+http` name expands to every A/AAAA record (one replica each) on each sample; a `k8s` Service of the ScaledObject's namespace to its ready EndpointSlice endpoints, one replica per pod, `port` a number or a port name (docs/kubernetes.md); at most 1,000"),
		keyschema.Bool(keyVictimHints, func(c *scrapeConfig) *bool { return &c.hints }, false).
			Describe("keep each pod's `controller.kubernetes.io/pod-deletion-cost` in the order of its load, so scale-in removes an idle pod first; only with `k8s://` targets and when the scaler allows it (`BAROMETER_VICTIM_HINTS`; docs/kubernetes.md)"),
		sourcekind.CPULimitCoresKey(func(c *scrapeConfig) *float64 { return &c.opts.CPULimitCores }),
		keyschema.Duration("scrapeTimeout", func(c *scrapeConfig) *time.Duration { return &c.opts.Timeout }, DefaultTimeout, 10*time.Millisecond, time.Minute, false).
			Describe("bound of one scrape, always inside the sample's own budget"),
		keyschema.Int("maxResponseBytes", func(c *scrapeConfig) *int64 { return &c.opts.MaxResponseBytes }, DefaultMaxResponseBytes, 1<<10, 1<<30).
			Describe("a larger response fails that replica"),
		keyschema.Int("scrapeConcurrency", func(c *scrapeConfig) *int { return &c.opts.Concurrency }, DefaultConcurrency, 1, 1024).
			Describe("scrapes in flight at once"),
		keyschema.Int("seriesLimit", func(c *scrapeConfig) *int { return &c.opts.SeriesLimit }, DefaultSeriesLimit, 1, 1000000).
			Describe("series of the contract's families one replica may expose (like Prometheus' sample_limit); more fails that replica before they are parsed, so a replica cannot make a sample's memory grow without bound"),
	}
	keys = append(keys, exposition.NameKeys(func(c *scrapeConfig) *exposition.Names { return &c.opts.Names },
		"a metric name: valid UTF-8, at most 200 bytes",
		func(s string) bool { return len(s) <= 200 && model.UTF8Validation.IsValidMetricName(s) })...)
	return sourcekind.New(KindName, "reads the pressure exposition contract straight from the replicas",
		func() scrapeConfig {
			return scrapeConfig{opts: Options{Allow: list, Discovery: kube.Discovery, Exchange: exchange, PrimeDelay: DefaultPrimeDelay}, profiles: profiles}
		}, keys,
		[]keyschema.Check[scrapeConfig]{
			func(c *scrapeConfig, _ *keyschema.Context, _ func(string) bool) error {
				return exposition.CheckUniqueNames(c.opts.Names)
			},
			func(c *scrapeConfig, ctx *keyschema.Context, _ func(string) bool) error {
				if slices.ContainsFunc(c.opts.Targets, func(t target.Target) bool { return t.Kube != nil }) {
					c.opts.Namespace = ctx.Namespace
				}
				return checkHints(c, kube)
			},
			resolveScrapeProfile,
		},
		func(c scrapeConfig) (sourcekind.Spec, error) { return scrapeSpec{opts: c.opts, hints: c.hints}, nil })
}

// scrapeConfig is a scrape trigger's keys: the source's options and the
// connection profile they name.
type scrapeConfig struct {
	opts     Options
	profiles *connprofile.Set
	profile  string
	hints    bool
}

// checkHints refuses victimHints where they cannot work: the scaler does
// not allow them, or a target has no pods to annotate.
func checkHints(c *scrapeConfig, kube Kube) error {
	if !c.hints {
		return nil
	}
	if !kube.Hints {
		return &keyschema.MetadataError{Key: keyVictimHints, Value: "true", Allowed: "victim hints are off in this scaler: set BAROMETER_VICTIM_HINTS=true (the scaler then needs patch on pods; the chart's victimHints.enabled grants it)"}
	}
	if slices.ContainsFunc(c.opts.Targets, func(t target.Target) bool { return t.Kube == nil }) {
		return &keyschema.MetadataError{Key: keyVictimHints, Value: "true", Allowed: "only when every target is a k8s:// target, whose replicas are pods"}
	}
	return nil
}

// resolveScrapeProfile picks the connection profile of the replicas: the
// one named, or the one every target's URL matches.
func resolveScrapeProfile(c *scrapeConfig, ctx *keyschema.Context, _ func(string) bool) error {
	urls := make([]string, len(c.opts.Targets))
	for i, t := range c.opts.Targets {
		urls[i] = strings.TrimPrefix(t.String(), "dns+")
		if t.Kube != nil {
			// A profile matches the Service's cluster-local name; a
			// port name is no URL port, so it is left out.
			u := *t.URL
			u.Host = t.Kube.Host(ctx.Namespace)
			if _, err := strconv.ParseUint(t.Kube.Port, 10, 16); err == nil {
				u.Host += ":" + t.Kube.Port
			}
			urls[i] = u.String()
		}
	}
	p, err := c.profiles.ResolveTargets(c.profile, urls, ctx.Namespace)
	if err != nil {
		return connprofile.MetadataError(err)
	}
	c.opts.Profile = p
	return nil
}

// Kube is the scrape source's access to Kubernetes.
type Kube struct {
	// Discovery expands k8s:// targets; nil refuses them, saying
	// Unavailable.
	Discovery discovery.Discovery
	// Unavailable says why the scaler has no Discovery.
	Unavailable error
	// Hints says the scaler allows victim hints (BAROMETER_VICTIM_HINTS).
	Hints bool
}

func scrapeTargets(raw string, list *allow.List, namespace string, kube Kube) ([]target.Target, string, bool) {
	var out []target.Target
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(raw, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		t, err := target.Parse(entry)
		if err != nil {
			return nil, fmt.Sprintf("%s: %v; each target is an http://, https://, dns+http:// or k8s:// URL", keyschema.Quote(entry), err), false
		}
		host := t.Host()
		if t.Kube != nil {
			switch {
			case kube.Discovery == nil:
				return nil, fmt.Sprintf("%s: k8s:// targets are not available in this scaler: %v", keyschema.Quote(entry), kube.Unavailable), false
			case namespace == "":
				return nil, keyschema.Quote(entry) + ": a k8s:// target reads its ScaledObject's namespace, and the scaler's own default target has none", false
			}
			host = t.Kube.Host(namespace)
		}
		if err := list.HostIn(namespace, host); err != nil {
			return nil, fmt.Sprintf("%s: %v", keyschema.Quote(entry), err), false
		}
		if seen[t.String()] {
			return nil, keyschema.Quote(entry) + ": each target once", false
		}
		seen[t.String()] = true
		out = append(out, t)
	}
	switch {
	case len(out) == 0:
		return nil, "at least one URL", false
	case len(out) > MaxScrapeTargets:
		return nil, fmt.Sprintf("at most %d targets (use a dns+http:// target for a large Service)", MaxScrapeTargets), false
	}
	// Order does not change what is scraped; sorted, it does not split the
	// sampler either.
	slices.SortFunc(out, func(a, b target.Target) int { return strings.Compare(a.String(), b.String()) })
	return out, "", true
}

func targetsText(ts []target.Target) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.String())
		b.WriteByte(',')
	}
	return b.String()
}

// scrapeSpec is the parsed configuration of a scrape source.
type scrapeSpec struct {
	opts  Options
	hints bool
}

// VictimHints says whether the source asks for victim hints and the
// namespace of the pods they rank. trigger.Trigger.VictimHints finds it
// through an interface, which an unexported method could not satisfy.
func (s scrapeSpec) VictimHints() (string, bool) { return s.opts.Namespace, s.hints }

// Key names the first target and hashes the full, resolved configuration:
// equal meanings give equal keys, and a thousand targets still give a key
// short enough for a metric label.
func (s scrapeSpec) Key() string {
	var b strings.Builder
	o := s.opts
	b.WriteString(targetsText(o.Targets))
	fmt.Fprintf(&b, " cpuLimitCores=%g scrapeTimeout=%s maxResponseBytes=%d scrapeConcurrency=%d seriesLimit=%d",
		o.CPULimitCores, o.Timeout, o.MaxResponseBytes, o.Concurrency, o.SeriesLimit)
	for _, n := range o.Names.Overrides() {
		fmt.Fprintf(&b, " %s=%q", n.Key, *n.Name)
	}
	if o.Profile != nil {
		fmt.Fprintf(&b, " connectionProfile=%q", o.Profile.Name())
	}
	if o.Namespace != "" {
		// The same k8s:// target in two namespaces is two Services.
		fmt.Fprintf(&b, " namespace=%s", o.Namespace)
	}
	if s.hints {
		b.WriteString(" victimHints=true")
	}
	sum := sha256.Sum256([]byte(b.String()))
	more := ""
	if len(o.Targets) > 1 {
		more = fmt.Sprintf("+%d", len(o.Targets)-1)
	}
	return fmt.Sprintf("scrape %s%s #%x", o.Targets[0], more, sum[:8])
}

func (s scrapeSpec) New(logger *slog.Logger) (pressure.Source, error) {
	o := s.opts
	o.Logger = logger
	return New(o)
}
