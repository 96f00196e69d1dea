package scaler

import (
	"strings"
	"testing"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// queued is n replicas, busy of them busy, with ready work waiting.
func queued(n int, ready, busy float64) pressure.Observation {
	obs := load(0.5, n)
	obs.Queue = &pressure.QueueObservation{Backlog: []pressure.ClassBacklog{{Class: "default", Ready: ready}}, Busy: busy}
	return obs
}

// A ScaledObject selects a policy with the policy key; KEDA's client gets
// the documented spec (target 1, AverageValue, so the HPA asks for exactly
// the published count) and the policy's desired count as the value.
func TestPoliciesThroughKEDAsClient(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name       string
		obs        pressure.Observation
		md         map[string]string
		metricName string
		want       float64
		active     bool
	}{
		// 120 ready items at the 1 s default service time drain in 30 s
		// with 4 replicas; the step limit allows 1 -> 4 at once.
		{"queue", queued(1, 120, 0), map[string]string{"policy": "queue"}, "barometer-queue", 4, true},
		{"fixed", queued(2, 50, 2), map[string]string{"policy": "fixed"}, "barometer-fixed", 2, true},
		{"fully-elastic", queued(1, 3, 1), map[string]string{"policy": "fully_elastic", "metricName": "jobs"}, "jobs", 2, true},
		{"max-count", queued(1, 3, 1), map[string]string{"policy": "max_count", "maxReplicas": "5"}, "barometer-max-count", 2, true},
		// max_count's maximum defaults to 0: an idle replica is removed.
		{"max-count-unset", queued(1, 3, 0), map[string]string{"policy": "max_count"}, "barometer-max-count", 0, false},
		// Utilization 0 is below the low threshold for 1 of 2 ticks: no-op.
		{"threshold", queued(2, 0, 0), map[string]string{"policy": "pool_with_threshold", "activationValue": "2"}, "barometer-pool-with-threshold", 2, false},
		{"pooled", queued(1, 3, 1), map[string]string{"policy": "fully_elastic", "pool": "solo"}, "barometer-fully-elastic", 2, true},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			h.workload(c.name).Set(c.obs)
			// One sample per test: a later one would take the next step.
			md := map[string]string{"script": c.name, "sampleInterval": "10m"}
			for k, v := range c.md {
				md[k] = v
			}
			r := ref(c.name, md)
			spec, err := h.client.GetMetricSpec(ctxT(t), r)
			if err != nil {
				t.Fatal(err)
			}
			if s := spec.MetricSpecs[0]; len(spec.MetricSpecs) != 1 || s.MetricName != c.metricName || s.TargetSizeFloat != 1 || s.TargetSize != 1 {
				t.Fatalf("spec %v, want %s with target 1", spec, c.metricName)
			}
			got, err := h.client.GetMetrics(ctxT(t), &externalscaler.GetMetricsRequest{ScaledObjectRef: r, MetricName: c.metricName})
			if err != nil {
				t.Fatal(err)
			}
			if v := got.MetricValues[0]; v.MetricName != c.metricName || v.MetricValueFloat != c.want || v.MetricValue != int64(c.want) {
				t.Fatalf("value %v, want %v", v, c.want)
			}
			active, err := h.client.IsActive(ctxT(t), r)
			if err != nil || active.Result != c.active {
				t.Fatalf("IsActive %v %v, want %v", active, err, c.active)
			}
			stream, err := h.client.StreamMetricSpec(ctxT(t), r)
			if err != nil {
				t.Fatal(err)
			}
			if s, err := stream.Recv(); err != nil || s.MetricSpecs[0].TargetSizeFloat != 1 {
				t.Fatalf("streamed spec %v %v", s, err)
			}
		})
	}
}

func TestInvalidPolicyMetadata(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		md    map[string]string
		wants []string
	}{
		{map[string]string{"policy": "elastic"}, []string{`"policy"`, "pressure, queue, fixed, fully_elastic, max_count, pool_with_threshold"}},
		{map[string]string{"policy": "queue", "targetPressure": "0.5"}, []string{`"targetPressure"`, "only for policy pressure"}},
		{map[string]string{"policy": "fixed", "ticks": "3"}, []string{`"ticks"`, "only for policy pool_with_threshold"}},
		{map[string]string{"pool": "p"}, []string{`"pool"`, "only for policies fixed, fully_elastic"}},
		{map[string]string{"policy": "queue", "ewmaAlpha": "2"}, []string{`"ewmaAlpha"`, "(0, 1]"}},
		{map[string]string{"policy": "pool_with_threshold", "thresholdLow": "0.9"}, []string{`"thresholdLow"`, "[0, 0.8]"}},
		{map[string]string{"policy": "queue", "sloClasses": "gold=soon"}, []string{`"sloClasses"`}},
	}
	for _, c := range tests {
		_, err := h.client.GetMetricSpec(ctxT(t), ref("orders", c.md))
		for _, w := range c.wants {
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), w) {
				t.Errorf("%v: %v, want InvalidArgument naming %s", c.md, err, w)
			}
		}
	}
}

// Pool members must agree on the pool's options: one that does not is
// invalid metadata, refused on every call.
func TestPoolMembersDisagreeing(t *testing.T) {
	h := newHarness(t)
	h.workload("a").Set(queued(1, 1, 1))
	h.workload("b").Set(queued(1, 1, 1))
	first := ref("a", map[string]string{"script": "a", "policy": "pool_with_threshold", "pool": "gpu"})
	if _, err := h.client.GetMetricSpec(ctxT(t), first); err != nil {
		t.Fatal(err)
	}
	odd := ref("b", map[string]string{"script": "b", "policy": "pool_with_threshold", "pool": "gpu", "ticks": "5"})
	_, err := h.client.GetMetricSpec(ctxT(t), odd)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), `"pool"`) ||
		!strings.Contains(status.Convert(err).Message(), "ticks=2") {
		t.Fatalf("GetMetricSpec: %v, want InvalidArgument on pool", err)
	}
	_, err = h.client.GetMetrics(ctxT(t), &externalscaler.GetMetricsRequest{ScaledObjectRef: odd, MetricName: "barometer-pool-with-threshold"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("GetMetrics: %v, want InvalidArgument", err)
	}
}
