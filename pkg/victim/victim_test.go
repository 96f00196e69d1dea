package victim

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// recorder is a Patcher that records each patch and fails the pods told
// to. Package kube's Patcher writes the same call through client-go.
type recorder struct {
	patches map[string][]int
	fail    map[string]bool
}

func (r *recorder) SetDeletionCost(_ context.Context, ns, pod string, cost int) error {
	if r.fail[pod] {
		return errors.New("forbidden")
	}
	r.patches[ns+"/"+pod] = append(r.patches[ns+"/"+pod], cost)
	return nil
}

func sample(ws map[string]float64, missing ...string) pressure.Observation {
	var obs pressure.Observation
	for pod, w := range ws {
		obs.Replicas = append(obs.Replicas, pressure.ReplicaObservation{Name: pod, Pod: pod, WorkingSet: w})
	}
	for _, m := range missing {
		obs.Missing = append(obs.Missing, pressure.MissingReplica{Name: m})
	}
	return obs
}

func TestRanksPatchOnlyOnChange(t *testing.T) {
	rec := &recorder{patches: map[string][]int{}, fail: map[string]bool{}}
	h := New(rec)
	r := h.For("shop", false)
	ctx := context.Background()

	r.Sample(ctx, sample(map[string]float64{"a": 0, "b": 5, "c": 9}), signal.Input{})
	want := map[string][]int{"shop/a": {0}, "shop/b": {1}, "shop/c": {2}}
	check(t, rec, want)

	// Nothing moved: no patch.
	r.Sample(ctx, sample(map[string]float64{"a": 0, "b": 6, "c": 9}), signal.Input{})
	check(t, rec, want)

	// b misses a sample: it keeps its last load, so nobody's rank moves.
	r.Sample(ctx, sample(map[string]float64{"a": 0, "c": 9}, "b"), signal.Input{})
	check(t, rec, want)

	// The load moves to a; equal loads share a rank (dense).
	r.Sample(ctx, sample(map[string]float64{"a": 9, "b": 0, "c": 0}), signal.Input{})
	want = map[string][]int{"shop/a": {0, 1}, "shop/b": {1, 0}, "shop/c": {2, 0}}
	check(t, rec, want)
	if got := testutil.ToFloat64(h.patches.WithLabelValues("shop")); got != 6 {
		t.Errorf("patches counted %v, want 6", got)
	}

	// A failed patch is counted and tried again next sample.
	rec.fail["a"] = true
	r.Sample(ctx, sample(map[string]float64{"a": 0, "b": 9, "c": 0}), signal.Input{})
	if got := testutil.ToFloat64(h.errors.WithLabelValues("shop")); got != 1 {
		t.Errorf("errors counted %v, want 1", got)
	}
	rec.fail["a"] = false
	r.Sample(ctx, sample(map[string]float64{"a": 0, "b": 9, "c": 0}), signal.Input{})
	if got := rec.patches["shop/a"]; got[len(got)-1] != 0 {
		t.Errorf("a after the retry: %v", got)
	}
}

// The pressure signal ranks by a replica's worst dimension, not its
// working set.
func TestPressurePolicyRanksByWorstDimension(t *testing.T) {
	rec := &recorder{patches: map[string][]int{}, fail: map[string]bool{}}
	r := New(rec).For("shop", true)
	in := signal.Input{Compute: pressure.ComputePressure{Replicas: []pressure.ReplicaPressure{
		{Name: "a", Resource: 0.9}, {Name: "b", Activation: 0.1},
	}}}
	r.Sample(context.Background(), sample(map[string]float64{"a": 0, "b": 100}), in)
	check(t, rec, map[string][]int{"shop/a": {1}, "shop/b": {0}})
}

func check(t *testing.T, rec *recorder, want map[string][]int) {
	t.Helper()
	if len(rec.patches) != len(want) {
		t.Fatalf("patches %v, want %v", rec.patches, want)
	}
	for k, w := range want {
		g := rec.patches[k]
		if len(g) != len(w) {
			t.Fatalf("%s: patches %v, want %v", k, g, w)
		}
		for i := range w {
			if g[i] != w[i] {
				t.Fatalf("%s: patches %v, want %v", k, g, w)
			}
		}
	}
}
