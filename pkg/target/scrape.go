package target

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
)

// SourceScrape is the source kind that scrapes the replicas directly.
const SourceScrape = "scrape"

// MaxScrapeTargets bounds the targets key: each static target is a replica
// scraped every sample, and a DNS target may expand to many more.
const MaxScrapeTargets = 1000

// scrapeSpec is the parsed configuration of a scrape source, every default
// resolved, so Key compares meanings rather than spellings.
type scrapeSpec struct {
	opts scrape.Options
}

// ScrapeParser returns the SourceParser of the scrape source. Every target
// must pass list (nil means allow.Default()): its host where the metadata
// names it, and, through the source, every address a DNS target expands to
// and every address dialled.
//
// Keys and defaults: targets (required; comma-separated http://, https://
// or dns+http:// URLs, path /metrics when none); cpuLimitCores 0 (the
// divisor for replicas without a CPU-limit gauge; 0 leaves their CPU
// unmeasured); scrapeTimeout 2s; maxResponseBytes 10 MiB; scrapeConcurrency
// 32; and the contract's metric-name keys (activationMetric, cpuMetric,
// cpuLimitMetric, memoryMetric, memoryLimitMetric, walStateMetric,
// splitsMetric, treeRetainedBytesMetric, treeRetainedBytesCeilingMetric,
// treeSaturationMetric, partitionAccountMetric, and the queue's
// queueArrivalsMetric, queueRunDurationMetric, queueReadyMetric,
// queueRetryingMetric, queueDueMetric, queueBusyMetric,
// queueReservationStartMetric, queueReservationEndMetric,
// queueReservationSlotsMetric, queueReservedMetric), each defaulting to the
// exposition package's name.
func ScrapeParser(list *allow.List) SourceParser {
	if list == nil {
		list = allow.Default()
	}
	return func(p *Params) (SourceSpec, error) { return parseScrape(p, list) }
}

func parseScrape(p *Params, list *allow.List) (SourceSpec, error) {
	o := scrape.Options{Allow: list}
	var err error
	if o.Targets, err = scrapeTargets(p, list); err != nil {
		return nil, err
	}
	if o.CPULimitCores, err = p.Float("cpuLimitCores", 0, 0, math.Inf(1)); err != nil {
		return nil, err
	}
	if o.Timeout, err = p.Duration("scrapeTimeout", scrape.DefaultTimeout, 10*time.Millisecond, time.Minute); err != nil {
		return nil, err
	}
	maxBytes, err := p.Int("maxResponseBytes", scrape.DefaultMaxResponseBytes, 1<<10, 1<<30)
	if err != nil {
		return nil, err
	}
	o.MaxResponseBytes = int64(maxBytes)
	if o.Concurrency, err = p.Int("scrapeConcurrency", scrape.DefaultConcurrency, 1, 1024); err != nil {
		return nil, err
	}
	if o.Names, err = metricNames(p); err != nil {
		return nil, err
	}
	return scrapeSpec{opts: o}, nil
}

func scrapeTargets(p *Params, list *allow.List) ([]scrape.Target, error) {
	raw, ok := p.Lookup("targets")
	if !ok {
		return nil, &MetadataError{Key: "targets", Allowed: "required for source scrape: comma-separated URLs such as http://web-0.web.shop.svc:9100/metrics or dns+http://web.shop.svc:9100/metrics"}
	}
	var out []scrape.Target
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(raw, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		t, err := scrape.ParseTarget(entry)
		if err != nil {
			return nil, &MetadataError{Key: "targets", Value: entry, Allowed: fmt.Sprintf("%v; each target is an http://, https:// or dns+http:// URL", err)}
		}
		if err := list.Host(t.Host()); err != nil {
			return nil, &MetadataError{Key: "targets", Value: entry, Allowed: err.Error()}
		}
		if seen[t.String()] {
			return nil, &MetadataError{Key: "targets", Value: entry, Allowed: "each target once"}
		}
		seen[t.String()] = true
		out = append(out, t)
	}
	switch {
	case len(out) == 0:
		return nil, &MetadataError{Key: "targets", Value: raw, Allowed: "at least one URL"}
	case len(out) > MaxScrapeTargets:
		return nil, &MetadataError{Key: "targets", Allowed: fmt.Sprintf("at most %d targets (use a dns+http:// target for a large Service)", MaxScrapeTargets)}
	}
	// Order does not change what is scraped; sorted, it does not split the
	// sampler key either.
	slices.SortFunc(out, func(a, b scrape.Target) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// metricNames reads the renaming keys. Any UTF-8 name is accepted, since the
// exposition carries it quoted; two keys may not name the same metric, which
// could only be a mistake.
func metricNames(p *Params) (exposition.Names, error) {
	names := exposition.DefaultNames()
	used := map[string]string{}
	for _, o := range names.Overrides() {
		v := p.String(o.Key, *o.Name)
		if !model.UTF8Validation.IsValidMetricName(v) || len(v) > 200 {
			return names, &MetadataError{Key: o.Key, Value: v, Allowed: "a metric name: valid UTF-8, at most 200 bytes"}
		}
		if k, dup := used[v]; dup {
			return names, &MetadataError{Key: o.Key, Value: v, Allowed: "a metric no other key names; " + k + " already names it"}
		}
		used[v], *o.Name = o.Key, v
	}
	// The run duration is also read as its _sum and _count series, which
	// no other key may name either.
	for _, suffix := range []string{exposition.SumSuffix, exposition.CountSuffix} {
		if k, dup := used[names.QueueRunDuration+suffix]; dup {
			return names, &MetadataError{Key: k, Value: names.QueueRunDuration + suffix,
				Allowed: "a metric no other key names; queueRunDurationMetric reads it as its " + suffix + " series"}
		}
	}
	return names, nil
}

// Key names the first target and hashes the full, resolved configuration:
// equal meanings give equal keys, and a thousand targets still give a key
// short enough for a metric label.
func (s scrapeSpec) Key() string {
	var b strings.Builder
	o := s.opts
	for _, t := range o.Targets {
		b.WriteString(t.String())
		b.WriteByte(',')
	}
	fmt.Fprintf(&b, " cpuLimitCores=%g scrapeTimeout=%s maxResponseBytes=%d scrapeConcurrency=%d",
		o.CPULimitCores, o.Timeout, o.MaxResponseBytes, o.Concurrency)
	for _, n := range o.Names.Overrides() {
		fmt.Fprintf(&b, " %s=%q", n.Key, *n.Name)
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
	return scrape.New(o)
}
