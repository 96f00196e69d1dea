package metrics

import (
	"cmp"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// signalGatherer reports every running target at scrape time from its
// latest snapshot: one atomic load per target, so a scrape never triggers or
// waits for a sample, and the numbers are exactly what /scale and the gRPC
// scaler serve at that moment. Safe for concurrent use.
//
// Before a target's first sample only the sampling facts are reported
// (stale, warming up, the counters): a scale value of 0 there would be a
// fake zero, and an absent series is what "unknown" looks like in
// Prometheus. A stale signal keeps its last values, flagged by
// barometer_signal_stale and aged by barometer_signal_age_seconds.
//
// It builds the metric families itself, in the scraping goroutine, rather
// than as a prometheus.Collector, because of what a scrape of many targets
// does to the reads beside it (bench_test.go): a collector runs in a
// goroutine of its own while the registry processes what it sends, so a
// scrape of 1,000 targets kept both cores of a two-core node busy, and a
// gRPC handler woken by the network then waited for the runtime's
// 10 ms poll (p99 8 to 11 ms, max 85 ms). Built here, one goroutine does
// the work, a core stays free, and each series costs three allocations
// (its metric, value and number) against the thirteen of a const metric,
// with the target's label pairs shared by all of its series.
type signalGatherer struct {
	reg *registry.Registry
}

// family names and helps every family the gatherer reports. Families keep
// this order in a scrape's first pass; Gatherers sorts them by name after.
type family struct {
	name, help string
	kind       dto.MetricType
}

var (
	gauge   = dto.MetricType_GAUGE
	counter = dto.MetricType_COUNTER
)

// The families, in the order of signalFamilies.
const (
	famTargets = iota
	famRefusals
	famScaleValue
	famRawScaleValue
	famForecast
	famRecommendedReplicas
	famComputePressure
	famObservedReplicas
	famMissingReplicas
	famWalSaturation
	famWalSaturationState
	famStorageOverThreshold
	famStorageRetainedBytes
	famScaleInAllowed
	famScaleInHeld
	famSplitInFlight
	famAge
	famDataAge
	famStale
	famWarmingUp
	famInterval
	famLastDuration
	famLastSuccess
	famSamples
	famFailures
	famSplitProbeFailures
	famScrapeErrors
	famDecisions
	famReplicaSeconds
	famReplicaCost
	numFamilies
)

// signalFamilies: every one but targets and refusals carries the target
// label, and all but the last three the source label too (the last three
// are labelled as the audit trail names them).
var signalFamilies = [numFamilies]family{
	famTargets:             {"targets", "Targets (samplers) running.", gauge},
	famRefusals:            {"limit_refusals_total", "Calls refused because they would pass a limit (targets, targets_per_namespace, refs_per_target).", counter},
	famScaleValue:          {"scale_value", "Smoothed, gated, floored replica demand served to KEDA.", gauge},
	famRawScaleValue:       {"raw_scale_value", "Instantaneous replica demand: dominant dimension x replicas.", gauge},
	famForecast:            {"forecast_value", "Seasonal forecast of the replica demand (the trigger's forecast key on or only; 0 when no season was found).", gauge},
	famRecommendedReplicas: {"recommended_replicas", "Replicas the HPA of the ScaledObject the labels name asks for: max(minReplicas, ceil(scale value / targetPressure)).", gauge},
	famComputePressure:     {"compute_pressure", "Worst replica's pressure per compute dimension, 0 to 1.", gauge},
	famObservedReplicas:    {"observed_replicas", "Replicas that answered the last successful sample.", gauge},
	famMissingReplicas:     {"missing_replicas", "Replicas that did not answer the last successful sample.", gauge},
	famWalSaturation:       {"wal_saturation", "Worst WAL saturation state: 0 Healthy, 1 Throttled, 2 Saturated.", gauge},
	famWalSaturationState:  {"wal_saturation_state", "1 for the current worst WAL saturation state, 0 for the others.", gauge},
	famStorageOverThreshold: {"storage_over_threshold",
		"1 when retained WAL bytes are at or over the advisory share of their budget.", gauge},
	famStorageRetainedBytes: {"storage_wal_retained_bytes", "WAL bytes retained across all storage accounts.", gauge},
	famScaleInAllowed:       {"scale_in_allowed", "1 when the scale-in gate was open at the last sample.", gauge},
	famScaleInHeld:          {"scale_in_held", "1 when the gate held a falling signal at its previous value.", gauge},
	famSplitInFlight:        {"split_in_flight", "1 when a split in flight held scale-in at the last sample.", gauge},
	famAge:                  {"signal_age_seconds", "Seconds since the sample behind the signal was taken.", gauge},
	famDataAge: {"data_age_seconds",
		"How old the source's data was when sampled (a Prometheus answer's newest sample against the query time); absent when the source does not say.", gauge},
	famStale:              {"signal_stale", "1 when the signal is older than 3 x the sample interval or was never sampled.", gauge},
	famWarmingUp:          {"signal_warming_up", "1 until the target's first successful sample.", gauge},
	famInterval:           {"sample_interval_seconds", "The target's sample interval.", gauge},
	famLastDuration:       {"last_sample_duration_seconds", "How long the last sample attempt took, successful or not.", gauge},
	famLastSuccess:        {"last_sample_success", "1 when the last sample attempt succeeded.", gauge},
	famSamples:            {"samples_total", "Sample attempts since the target started.", counter},
	famFailures:           {"sample_failures_total", "Failed sample attempts; each kept the previous signal.", counter},
	famSplitProbeFailures: {"split_probe_failures_total", "Samples whose split probe failed open (assumed no split).", counter},
	famScrapeErrors:       {"scrape_errors_total", "Failed scrapes per replica; each left the replica out of its sample.", counter},
	famDecisions: {"decisions_total",
		"Decisions the target's policy made, by action (scale_up, scale_down, no-op); one per sample, or per pool tick.", counter},
	famReplicaSeconds: {"replica_seconds_total",
		"Replica-seconds the target's replicas have run since its sampler started, as the source saw them.", counter},
	famReplicaCost: {"replica_cost_total", "Replica-seconds priced at the target's costPerReplicaSecond, since its sampler started.", counter},
}

// replicaErrorCounter is what a source that reads replicas one by one (the
// scrape source) offers: failures per replica since it was first targeted.
type replicaErrorCounter interface {
	ErrorCounts() map[string]uint64
}

// scrape is one Gather's families under construction.
type scrape [numFamilies]*dto.MetricFamily

// add appends a series of value v, labelled by labels (sorted by name, and
// shared: never changed after), to family f.
func (s *scrape) add(f int, v float64, labels []*dto.LabelPair) {
	m := &dto.Metric{Label: labels}
	if signalFamilies[f].kind == counter {
		m.Counter = &dto.Counter{Value: proto.Float64(v)}
	} else {
		m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
	}
	s[f].Metric = append(s[f].Metric, m)
}

// Gather reports every target (prometheus.Gatherer).
func (g *signalGatherer) Gather() ([]*dto.MetricFamily, error) {
	var s scrape
	for i, f := range signalFamilies {
		s[i] = &dto.MetricFamily{Name: proto.String(Namespace + "_" + f.name), Help: proto.String(f.help), Type: f.kind.Enum()}
	}
	targets := g.reg.Named()
	s.add(famTargets, float64(len(targets)), nil)
	for limit, n := range g.reg.Refusals() {
		s.add(famRefusals, float64(n), []*dto.LabelPair{pair("limit", limit)})
	}
	now := g.reg.Now()
	for _, named := range targets {
		t := named.Target
		labels := sorted(pair("scaledobject_namespace", named.Ref.Namespace), pair("scaledobject_name", named.Ref.Name), pair("source", t.SourceKey()), pair("target", t.Key))
		snap := t.Load()
		s.target(labels, snap, named, now)
		for action, n := range t.Decisions() {
			s.add(famDecisions, float64(n), sorted(append([]*dto.LabelPair{pair("action", action), pair("policy", t.Policy())}, labels...)...))
		}
		if ec, ok := t.Source().(replicaErrorCounter); ok {
			for replica, n := range ec.ErrorCounts() {
				s.add(famScrapeErrors, float64(n), sorted(append([]*dto.LabelPair{pair("replica", replica)}, labels...)...))
			}
		}
		if sig := &snap.Signal; !sig.WarmingUp() {
			s.add(famReplicaSeconds, sig.Cost.ReplicaSeconds, labels)
			s.add(famReplicaCost, sig.Cost.Cost, labels)
		}
	}
	out := make([]*dto.MetricFamily, 0, numFamilies)
	for _, f := range s {
		if len(f.Metric) > 0 {
			out = append(out, f)
		}
	}
	return out, nil
}

// target adds one target's series from its snapshot; labels are its
// labels, sorted. The recommended replicas are those the ScaledObject that
// names it asks for.
func (s *scrape) target(labels []*dto.LabelPair, snap *sampling.Snapshot, named registry.Served, now time.Time) {
	with := func(name, value string) []*dto.LabelPair {
		return sorted(append([]*dto.LabelPair{pair(name, value)}, labels...)...)
	}
	s.add(famInterval, snap.Interval.Seconds(), labels)
	s.add(famStale, b2f(snap.Stale(now)), labels)
	s.add(famWarmingUp, b2f(snap.Signal.WarmingUp()), labels)
	s.add(famSamples, float64(snap.Samples), labels)
	s.add(famFailures, float64(snap.Failures), labels)
	s.add(famSplitProbeFailures, float64(snap.SplitProbeFailures), labels)
	if snap.Samples > 0 {
		s.add(famLastDuration, snap.LastDuration.Seconds(), labels)
		s.add(famLastSuccess, b2f(snap.LastErr == nil), labels)
	}
	sig := &snap.Signal
	if sig.WarmingUp() {
		return
	}
	s.add(famAge, now.Sub(sig.SampledAt).Seconds(), labels)
	if age, ok := sig.DataAge(); ok {
		s.add(famDataAge, age.Seconds(), labels)
	}
	s.add(famScaleValue, sig.ScaleValue, labels)
	s.add(famRawScaleValue, sig.RawScaleValue, labels)
	s.add(famForecast, sig.Forecast, labels)
	recommended := sig.RecommendedReplicas
	if named.Trigger != nil {
		recommended = named.Trigger.Reader().Replicas(sig.ScaleValue)
	}
	s.add(famRecommendedReplicas, float64(recommended), labels)
	s.add(famComputePressure, sig.Compute.Activation, with("dimension", signal.Activation.String()))
	s.add(famComputePressure, sig.Compute.Resource, with("dimension", signal.Resource.String()))
	s.add(famComputePressure, sig.Compute.WalDispatch, with("dimension", signal.WalDispatch.String()))
	s.add(famObservedReplicas, float64(sig.Compute.ReplicaCount), labels)
	s.add(famMissingReplicas, float64(len(sig.Compute.Missing)), labels)
	s.add(famWalSaturation, float64(sig.Compute.WalSaturation), labels)
	for _, st := range []pressure.WalSaturationState{pressure.Healthy, pressure.Throttled, pressure.Saturated} {
		s.add(famWalSaturationState, b2f(sig.Compute.WalSaturation == st), with("state", st.String()))
	}
	s.add(famStorageOverThreshold, b2f(sig.Storage.OverThreshold), labels)
	s.add(famStorageRetainedBytes, float64(sig.Storage.WalRetainedBytes), labels)
	s.add(famScaleInAllowed, b2f(sig.ScaleInAllowed), labels)
	s.add(famScaleInHeld, b2f(sig.Held), labels)
	s.add(famSplitInFlight, b2f(sig.SplitInFlight), labels)
}

func pair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
}

// sorted orders label pairs by name, as the exposition requires.
func sorted(pairs ...*dto.LabelPair) []*dto.LabelPair {
	slices.SortFunc(pairs, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return pairs
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
