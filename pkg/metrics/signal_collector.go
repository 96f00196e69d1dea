package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// signalCollector reports every running target at scrape time from its
// latest snapshot: one atomic load per target, so a scrape never triggers or
// waits for a sample, and the numbers are exactly what /scale and the gRPC
// scaler serve at that moment. Safe for concurrent use.
//
// Before a target's first sample only the sampling facts are reported
// (stale, warming up, the counters): a scale value of 0 there would be a
// fake zero, and an absent series is what "unknown" looks like in
// Prometheus. A stale signal keeps its last values, flagged by
// barometer_signal_stale and aged by barometer_signal_age_seconds.
type signalCollector struct {
	reg  *registry.Registry
	desc signalDescs
}

// signalDescs are the collector's metric descriptions; every one except
// targets carries the target and source labels.
type signalDescs struct {
	targets  *prometheus.Desc
	refusals *prometheus.Desc

	scaleValue, rawScaleValue, recommendedReplicas *prometheus.Desc
	computePressure                                *prometheus.Desc // also labelled dimension
	observedReplicas, missingReplicas              *prometheus.Desc
	walSaturation, walSaturationState              *prometheus.Desc // the enum is also labelled state
	storageOverThreshold, storageRetainedBytes     *prometheus.Desc
	scaleInAllowed, scaleInHeld, splitInFlight     *prometheus.Desc

	age, stale, warmingUp, interval       *prometheus.Desc
	dataAge                               *prometheus.Desc
	lastDuration, lastSuccess             *prometheus.Desc
	samples, failures, splitProbeFailures *prometheus.Desc
	scrapeErrors                          *prometheus.Desc // also labelled replica

	// Labelled target only (decisions also policy and action), as the
	// audit trail names them.
	decisions, replicaSeconds, replicaCost *prometheus.Desc
}

// replicaErrorCounter is what a source that reads replicas one by one (the
// scrape source) offers: failures per replica since it was first targeted.
type replicaErrorCounter interface {
	ErrorCounts() map[string]uint64
}

func newSignalCollector(reg *registry.Registry) *signalCollector {
	d := func(name, help string, extra ...string) *prometheus.Desc {
		labels := append([]string{"target", "source"}, extra...)
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	return &signalCollector{reg: reg, desc: signalDescs{
		targets: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "targets"),
			"Targets (samplers) running.", nil, nil),
		refusals: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "limit_refusals_total"),
			"Calls refused because they would pass a limit (targets, targets_per_namespace, refs_per_target).", []string{"limit"}, nil),

		scaleValue:          d("scale_value", "Smoothed, gated, floored replica demand served to KEDA."),
		rawScaleValue:       d("raw_scale_value", "Instantaneous replica demand: dominant dimension x replicas."),
		recommendedReplicas: d("recommended_replicas", "max(minReplicas, ceil(scale value))."),
		computePressure:     d("compute_pressure", "Worst replica's pressure per compute dimension, 0 to 1.", "dimension"),
		observedReplicas:    d("observed_replicas", "Replicas that answered the last successful sample."),
		missingReplicas:     d("missing_replicas", "Replicas that did not answer the last successful sample."),
		walSaturation:       d("wal_saturation", "Worst WAL saturation state: 0 Healthy, 1 Throttled, 2 Saturated."),
		walSaturationState:  d("wal_saturation_state", "1 for the current worst WAL saturation state, 0 for the others.", "state"),
		storageOverThreshold: d("storage_over_threshold",
			"1 when retained WAL bytes are at or over the advisory share of their budget."),
		storageRetainedBytes: d("storage_wal_retained_bytes", "WAL bytes retained across all storage accounts."),
		scaleInAllowed:       d("scale_in_allowed", "1 when the scale-in gate was open at the last sample."),
		scaleInHeld:          d("scale_in_held", "1 when the gate held a falling signal at its previous value."),
		splitInFlight:        d("split_in_flight", "1 when a split in flight held scale-in at the last sample."),

		age:       d("signal_age_seconds", "Seconds since the sample behind the signal was taken."),
		dataAge:   d("data_age_seconds", "How old the source's data was when sampled (a Prometheus answer's newest sample against the query time); absent when the source does not say."),
		stale:     d("signal_stale", "1 when the signal is older than 3 x the sample interval or was never sampled."),
		warmingUp: d("signal_warming_up", "1 until the target's first successful sample."),
		interval:  d("sample_interval_seconds", "The target's sample interval."),
		lastDuration: d("last_sample_duration_seconds",
			"How long the last sample attempt took, successful or not."),
		lastSuccess:        d("last_sample_success", "1 when the last sample attempt succeeded."),
		samples:            d("samples_total", "Sample attempts since the target started."),
		failures:           d("sample_failures_total", "Failed sample attempts; each kept the previous signal."),
		splitProbeFailures: d("split_probe_failures_total", "Samples whose split probe failed open (assumed no split)."),
		scrapeErrors:       d("scrape_errors_total", "Failed scrapes per replica; each left the replica out of its sample.", "replica"),

		decisions: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "decisions_total"),
			"Decisions the target's policy made, by action (scale_up, scale_down, no-op); one per sample, or per pool tick.",
			[]string{"target", "policy", "action"}, nil),
		replicaSeconds: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "replica_seconds_total"),
			"Replica-seconds the target's replicas have run since its sampler started, as the source saw them.",
			[]string{"target"}, nil),
		replicaCost: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "replica_cost_total"),
			"Replica-seconds priced at the target's costPerReplicaSecond, since its sampler started.",
			[]string{"target"}, nil),
	}}
}

// Describe sends every description; the collector is a checked one.
func (c *signalCollector) Describe(ch chan<- *prometheus.Desc) {
	d := &c.desc
	for _, desc := range []*prometheus.Desc{
		d.targets, d.refusals, d.scaleValue, d.rawScaleValue, d.recommendedReplicas, d.computePressure,
		d.observedReplicas, d.missingReplicas, d.walSaturation, d.walSaturationState,
		d.storageOverThreshold, d.storageRetainedBytes, d.scaleInAllowed, d.scaleInHeld, d.splitInFlight,
		d.age, d.dataAge, d.stale, d.warmingUp, d.interval, d.lastDuration, d.lastSuccess,
		d.samples, d.failures, d.splitProbeFailures, d.scrapeErrors,
		d.decisions, d.replicaSeconds, d.replicaCost,
	} {
		ch <- desc
	}
}

// Collect walks the registry's targets and reports each one's snapshot.
func (c *signalCollector) Collect(ch chan<- prometheus.Metric) {
	targets := c.reg.Targets()
	ch <- prometheus.MustNewConstMetric(c.desc.targets, prometheus.GaugeValue, float64(len(targets)))
	for limit, n := range c.reg.Refusals() {
		ch <- prometheus.MustNewConstMetric(c.desc.refusals, prometheus.CounterValue, float64(n), limit)
	}
	now := c.reg.Now()
	for _, t := range targets {
		c.collectTarget(ch, t.Key, t.SourceKey(), t.Load(), now)
		c.collectDecisions(ch, t)
		if ec, ok := t.Source().(replicaErrorCounter); ok {
			for replica, n := range ec.ErrorCounts() {
				ch <- prometheus.MustNewConstMetric(c.desc.scrapeErrors, prometheus.CounterValue, float64(n), t.Key, t.SourceKey(), replica)
			}
		}
	}
}

func (c *signalCollector) collectTarget(ch chan<- prometheus.Metric, key, source string, snap *signal.Snapshot, now time.Time) {
	d := &c.desc
	emit := func(desc *prometheus.Desc, kind prometheus.ValueType, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(desc, kind, v, append([]string{key, source}, extra...)...)
	}
	gauge := func(desc *prometheus.Desc, v float64, extra ...string) {
		emit(desc, prometheus.GaugeValue, v, extra...)
	}

	gauge(d.interval, snap.Interval.Seconds())
	gauge(d.stale, b2f(snap.Stale(now)))
	gauge(d.warmingUp, b2f(snap.Signal.WarmingUp()))
	emit(d.samples, prometheus.CounterValue, float64(snap.Samples))
	emit(d.failures, prometheus.CounterValue, float64(snap.Failures))
	emit(d.splitProbeFailures, prometheus.CounterValue, float64(snap.SplitProbeFailures))
	if snap.Samples > 0 {
		gauge(d.lastDuration, snap.LastDuration.Seconds())
		gauge(d.lastSuccess, b2f(snap.LastErr == nil))
	}
	sig := &snap.Signal
	if sig.WarmingUp() {
		return
	}

	gauge(d.age, now.Sub(sig.SampledAt).Seconds())
	if age, ok := sig.DataAge(); ok {
		gauge(d.dataAge, age.Seconds())
	}
	gauge(d.scaleValue, sig.ScaleValue)
	gauge(d.rawScaleValue, sig.RawScaleValue)
	gauge(d.recommendedReplicas, float64(sig.RecommendedReplicas))
	gauge(d.computePressure, sig.Compute.Activation, signal.Activation.String())
	gauge(d.computePressure, sig.Compute.Resource, signal.Resource.String())
	gauge(d.computePressure, sig.Compute.WalDispatch, signal.WalDispatch.String())
	gauge(d.observedReplicas, float64(sig.Compute.ReplicaCount))
	gauge(d.missingReplicas, float64(len(sig.Compute.Missing)))
	gauge(d.walSaturation, float64(sig.Compute.WalSaturation))
	for _, st := range []pressure.WalSaturationState{pressure.Healthy, pressure.Throttled, pressure.Saturated} {
		gauge(d.walSaturationState, b2f(sig.Compute.WalSaturation == st), st.String())
	}
	gauge(d.storageOverThreshold, b2f(sig.Storage.OverThreshold))
	gauge(d.storageRetainedBytes, float64(sig.Storage.WalRetainedBytes))
	gauge(d.scaleInAllowed, b2f(sig.ScaleInAllowed))
	gauge(d.scaleInHeld, b2f(sig.Held))
	gauge(d.splitInFlight, b2f(sig.SplitInFlight))
	ch <- prometheus.MustNewConstMetric(d.replicaSeconds, prometheus.CounterValue, sig.Cost.ReplicaSeconds, key)
	ch <- prometheus.MustNewConstMetric(d.replicaCost, prometheus.CounterValue, sig.Cost.Cost, key)
}

// collectDecisions reports the target's decision counts. Every action is
// reported from the start, at 0 until it happens, so rate() sees the first
// one.
func (c *signalCollector) collectDecisions(ch chan<- prometheus.Metric, t *registry.Target) {
	for action, n := range t.Decisions() {
		ch <- prometheus.MustNewConstMetric(c.desc.decisions, prometheus.CounterValue, float64(n), t.Key, t.Policy(), action)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
