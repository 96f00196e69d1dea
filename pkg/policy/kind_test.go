package policy

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// Each kind's keys set its own options.
func TestKindKeysSetTheirOptions(t *testing.T) {
	queue := func(k, v string) QueueOptions {
		t.Helper()
		spec, err := Queue.FromMetadata(map[string]string{k: v})
		if err != nil {
			t.Fatalf("%s=%s: %v", k, v, err)
		}
		return spec.(queueSpec).p.opts
	}
	elastic := func(kind Kind, k, v string) ElasticityOptions {
		t.Helper()
		spec, err := kind.FromMetadata(map[string]string{k: v})
		if err != nil {
			t.Fatalf("%s %s=%s: %v", kind.Name, k, v, err)
		}
		return spec.(elasticSpec).p.opts
	}
	for _, c := range []struct {
		key, value string
		got        func(QueueOptions) any
		want       any
	}{
		{"ewmaAlpha", "0.5", func(o QueueOptions) any { return o.EwmaAlpha }, 0.5},
		{"defaultServiceTime", "2s", func(o QueueOptions) any { return o.DefaultServiceTime }, 2 * time.Second},
		{"targetUtilization", "0.9", func(o QueueOptions) any { return o.TargetUtilization }, 0.9},
		{"rateCutoff", "0.1", func(o QueueOptions) any { return o.RateCutoff }, 0.1},
		{"drainTime", "1m", func(o QueueOptions) any { return o.DrainTime }, time.Minute},
		{"reservationHorizon", "0s", func(o QueueOptions) any { return o.ReservationHorizon }, time.Duration(0)},
		{"minReplicas", "2", func(o QueueOptions) any { return o.MinReplicas }, 2},
		{"maxReplicas", "9", func(o QueueOptions) any { return o.MaxReplicas }, 9},
		{"maxStepUpRatio", "0.5", func(o QueueOptions) any { return o.MaxStepUpRatio }, 0.5},
		{"maxStepUp", "2", func(o QueueOptions) any { return o.MaxStepUpAbs }, 2},
		{"stabilizationWindow", "2m", func(o QueueOptions) any { return o.StabilizationWindow }, 2 * time.Minute},
		{"maxStepDown", "3", func(o QueueOptions) any { return o.MaxStepDown }, 3},
		{"scaleDownCooldown", "10s", func(o QueueOptions) any { return o.ScaleDownCooldown }, 10 * time.Second},
		{"slotsPerReplica", "4", func(o QueueOptions) any { return o.SlotsPerReplica }, 4},
	} {
		if got := c.got(queue(c.key, c.value)); got != c.want {
			t.Errorf("queue %s=%s: got %v, want %v", c.key, c.value, got, c.want)
		}
	}
	if got := queue("sloClasses", "critical=5s, normal").Classes; !slices.Equal(got, []Class{{Name: "critical", SLO: 5 * time.Second}, {Name: "normal"}}) {
		t.Errorf("sloClasses: %v", got)
	}
	for _, c := range []struct {
		kind       Kind
		key, value string
		got        func(ElasticityOptions) any
		want       any
	}{
		{FullyElastic, "slotsPerReplica", "8", func(o ElasticityOptions) any { return o.SlotsPerReplica }, 8},
		{PoolWithThreshold, "slotsPerReplica", "2", func(o ElasticityOptions) any { return o.SlotsPerReplica }, 2},
		{FullyElastic, "minReplicas", "1", func(o ElasticityOptions) any { return o.Min }, 1},
		{MaxCount, "maxReplicas", "7", func(o ElasticityOptions) any { return o.Max }, 7},
		{PoolWithThreshold, "threshold", "0.9", func(o ElasticityOptions) any { return o.High }, 0.9},
		{PoolWithThreshold, "thresholdLow", "0.1", func(o ElasticityOptions) any { return o.Low }, 0.1},
		{PoolWithThreshold, "ticks", "3", func(o ElasticityOptions) any { return o.Ticks }, 3},
	} {
		if got := c.got(elastic(c.kind, c.key, c.value)); got != c.want {
			t.Errorf("%s %s=%s: got %v, want %v", c.kind.Name, c.key, c.value, got, c.want)
		}
	}
}

// Each kind starts from its documented defaults, and its decisions carry
// its name.
func TestKindDefaults(t *testing.T) {
	spec, err := Queue.FromMetadata(nil)
	if err != nil || !reflect.DeepEqual(spec.(queueSpec).p.opts, DefaultQueueOptions()) {
		t.Errorf("queue defaults: %+v %v", spec, err)
	}
	for _, k := range Kinds() {
		spec, err := k.FromMetadata(nil)
		if err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		d := spec.New().Decide(Observation{Replicas: 2, Queue: QueueObservation{Arrivals: 1}}, t0)
		if d.Policy != k.Name {
			t.Errorf("%s decides as %q", k.Name, d.Policy)
		}
		if _, pooled := spec.NewPool(); pooled != k.Poolable {
			t.Errorf("%s: NewPool %t, Poolable %t", k.Name, pooled, k.Poolable)
		}
	}
	if _, err := Fixed.FromMetadata(map[string]string{"maxReplicas": "3"}); err == nil {
		t.Error("fixed took maxReplicas, which it does not read")
	}
}

// sloClasses: "name[=slo],..." highest priority first; a class without an
// SLO only ranks. Blanks around names and durations are fine.
func TestParseClasses(t *testing.T) {
	got, why, ok := parseClasses(" critical=5s, high=30s ,normal,low", nil)
	want := []Class{{Name: "critical", SLO: 5 * time.Second}, {Name: "high", SLO: 30 * time.Second}, {Name: "normal"}, {Name: "low"}}
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("got %v, %q; want %v", got, why, want)
	}
	for _, bad := range []string{" ", "a, b=soon", "a,,b", "a,a", "a=0s", "a=-1s"} {
		if _, why, ok := parseClasses(bad, nil); ok || why == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The elasticity policies read utilization over the slots of the replicas
// whose queue was read.
func TestElasticityObservesSlots(t *testing.T) {
	p := newElastic(t, PolicyPoolWithThreshold, func(o *ElasticityOptions) { o.SlotsPerReplica = 4 })
	got := p.observe(Observation{Replicas: 3, InFlight: 1, Pending: 5, Busy: 6, Answered: 2})
	if want := (ElasticityObservation{Replicas: 3, InFlight: 1, Pending: 5, Utilization: 0.75}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := p.observe(Observation{Replicas: 3}); got.Utilization != 0 {
		t.Errorf("no replica answered: utilization %v, want 0", got.Utilization)
	}
}
