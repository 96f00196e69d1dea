package promsource

import (
	"context"
	"errors"
	"maps"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// fakeAPI answers queries from a table; a query not in it returns no
// series. It records the instants it was asked at and the queries.
//
// A combined query (see dimLabel) not in the table it answers as
// Prometheus does: each part from the table with the dimension label
// added, the whole query failing with the first part that fails or is not
// an instant vector.
type fakeAPI struct {
	answers map[string]any // model.Value or error
	mu      sync.Mutex
	at      []time.Time
	asked   []string
}

func (f *fakeAPI) Query(ctx context.Context, q string, ts time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	f.mu.Lock()
	f.at = append(f.at, ts)
	f.asked = append(f.asked, q)
	f.mu.Unlock()
	parts := combinedPart.FindAllStringSubmatch(q, -1)
	if _, whole := f.answers[q]; len(parts) == 0 || whole {
		v, err := f.answer(ctx, q)
		return v, nil, nil, err
	}
	var out model.Vector
	for _, p := range parts {
		v, err := f.answer(ctx, p[1])
		if err != nil {
			return nil, nil, nil, err
		}
		vec, ok := v.(model.Vector)
		if !ok {
			return nil, nil, nil, errors.New("bad_data: expected type instant vector in call to function label_replace")
		}
		for _, smp := range vec {
			m := maps.Clone(smp.Metric)
			m[dimLabel] = model.LabelValue(p[2])
			out = append(out, &model.Sample{Metric: m, Value: smp.Value, Timestamp: smp.Timestamp})
		}
	}
	return out, nil, nil, nil
}

// combinedPart matches one part of a combined query: its query and its
// dimension.
var combinedPart = regexp.MustCompile(`label_replace\(([^\n]*)\n, "` + dimLabel + `", "(\d+)", "", ""\)`)

func (f *fakeAPI) answer(ctx context.Context, q string) (model.Value, error) {
	switch a := f.answers[q].(type) {
	case nil:
		return model.Vector{}, nil
	case error:
		return nil, a
	case func(context.Context) error:
		return nil, a(ctx)
	default:
		return a.(model.Value), nil
	}
}

// vec builds a vector from label-set/value pairs: vec("pod=a,job=x", 1, ...).
func vec(pairs ...any) model.Vector {
	var out model.Vector
	for i := 0; i < len(pairs); i += 2 {
		m := model.Metric{}
		for kv := range strings.SplitSeq(pairs[i].(string), ",") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			m[model.LabelName(k)] = model.LabelValue(v)
		}
		out = append(out, &model.Sample{Metric: m, Value: model.SampleValue(pairs[i+1].(float64))})
	}
	return out
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testSource samples at testNow, and a second later at each sample after:
// samples at one instant would share one answer (querypool.Pool).
func testSource(q Queries, answers map[string]any) (*Source, *fakeAPI) {
	api := &fakeAPI{answers: answers}
	var samples atomic.Int64
	now := func() time.Time { return testNow.Add(time.Duration(samples.Add(1)-1) * time.Second) }
	return newSource(api, Options{ServerAddress: "http://prom:9090", Queries: q, Now: now}), api
}

// contract is the usual query set, named after the dimension for legibility.
var contract = Queries{
	Activation: "act", CPU: "cpu", Memory: "mem", MemoryLimit: "memlim",
	WalState: "wal", SplitsInFlight: "splits",
}

func TestFoldsOneObservationPerReplica(t *testing.T) {
	src, api := testSource(contract, map[string]any{
		// b splits its working set in two series, which add up, and has
		// two CPU ratios, which do not: the larger counts.
		"act":    vec("pod=a", 10.0, "pod=b", 20.0, "pod=b,shard=2", 50.0),
		"cpu":    vec("pod=a", 0.5, "pod=b", 0.25, "pod=b,container=side", 0.125, "pod=c", 1.0), // c has no working set
		"mem":    vec("pod=a", 100.0, "pod=b", 300.0),
		"memlim": vec("pod=b", 1000.0), // a has no ceiling
		"wal":    vec("pod=a", 1.0, "pod=b", 0.0),
		"splits": vec("pod=a", 2.0),
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []pressure.ReplicaObservation{
		{Name: "a", WorkingSet: 10, HasWorkingSet: true, CPUUtilisation: 0.5, MemoryUsedBytes: 100, WalSaturation: pressure.Throttled, SplitsInFlight: 2, HasSplits: true},
		{Name: "b", WorkingSet: 70, HasWorkingSet: true, CPUUtilisation: 0.25, MemoryUsedBytes: 300, MemoryLimitBytes: 1000},
		{Name: "c", CPUUtilisation: 1},
	}
	if len(obs.Replicas) != len(want) {
		t.Fatalf("replicas = %+v, want %+v", obs.Replicas, want)
	}
	for i := range want {
		if obs.Replicas[i] != want[i] {
			t.Errorf("replica %d = %+v, want %+v", i, obs.Replicas[i], want[i])
		}
	}
	if obs.Trees != nil || obs.SplitsErr != nil || len(obs.Missing) != 0 {
		t.Errorf("trees %v, splitsErr %v, missing %v; want none", obs.Trees, obs.SplitsErr, obs.Missing)
	}
	if !obs.ObservedAt.Equal(testNow) {
		t.Errorf("ObservedAt = %v", obs.ObservedAt)
	}
	for _, at := range api.at {
		if !at.Equal(testNow) {
			t.Errorf("a query was evaluated at %v, not the sample's instant", at)
		}
	}
}

func TestQueryErrorFailsTheSample(t *testing.T) {
	src, _ := testSource(contract, map[string]any{
		"act": vec("pod=a", 1.0),
		"cpu": errors.New("bad_data: parse error"),
	})
	_, err := src.Observe(context.Background())
	if err == nil || !strings.Contains(err.Error(), `cpuQuery "cpu"`) || !strings.Contains(err.Error(), "parse error") {
		t.Fatalf("err = %v, want the cpuQuery named with the server's reason", err)
	}
}

func TestSplitsQueryFailsOpen(t *testing.T) {
	src, _ := testSource(contract, map[string]any{
		"act":    vec("pod=a", 1.0),
		"splits": errors.New("server_error: boom"),
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatalf("a failed splits query must not fail the sample: %v", err)
	}
	if obs.SplitsErr == nil || !strings.Contains(obs.SplitsErr.Error(), "splitsInFlightQuery") {
		t.Errorf("SplitsErr = %v, want the splits query named", obs.SplitsErr)
	}
	if len(obs.Replicas) != 1 || obs.Replicas[0].HasSplits {
		t.Errorf("replicas = %+v, want a with no split footprint", obs.Replicas)
	}
}

func TestUnreadableSplitFootprintFailsOpen(t *testing.T) {
	src, _ := testSource(contract, map[string]any{
		"act":    vec("pod=a", 1.0, "pod=b", 1.0),
		"splits": vec("pod=a", -1.0, "pod=b", 3.0),
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if obs.SplitsErr == nil || !strings.Contains(obs.SplitsErr.Error(), "a is -1") {
		t.Errorf("SplitsErr = %v, want replica a named", obs.SplitsErr)
	}
	if a, b := obs.Replicas[0], obs.Replicas[1]; a.HasSplits || !b.HasSplits || b.SplitsInFlight != 3 {
		t.Errorf("replicas = %+v, want a without a footprint and b with 3", obs.Replicas)
	}
}

func TestEmptyResults(t *testing.T) {
	t.Run("every query empty is no replicas", func(t *testing.T) {
		src, _ := testSource(contract, nil)
		_, err := src.Observe(context.Background())
		if !errors.Is(err, ErrNoReplicas) {
			t.Fatalf("err = %v, want ErrNoReplicas", err)
		}
	})
	t.Run("one empty dimension reads 0", func(t *testing.T) {
		src, _ := testSource(contract, map[string]any{"cpu": vec("pod=a", 0.5)})
		obs, err := src.Observe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := pressure.ReplicaObservation{Name: "a", CPUUtilisation: 0.5}
		if len(obs.Replicas) != 1 || obs.Replicas[0] != want {
			t.Errorf("replicas = %+v, want [%+v]", obs.Replicas, want)
		}
	})
	t.Run("empty replicas query is no replicas", func(t *testing.T) {
		q := contract
		q.Replicas = "up"
		src, _ := testSource(q, map[string]any{"act": vec("pod=a", 1.0)})
		_, err := src.Observe(context.Background())
		if !errors.Is(err, ErrNoReplicas) || !strings.Contains(err.Error(), "replicasQuery returned no series") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestReplicasQueryDecidesTheReplicas(t *testing.T) {
	q := contract
	q.Replicas = "up"
	src, _ := testSource(q, map[string]any{
		"up":  vec("pod=a", 1.0, "pod=b", 0.0, "pod=c", 1.0),
		"act": vec("pod=a", 5.0, "pod=b", 7.0, "pod=old", 99.0),
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range obs.Replicas {
		names = append(names, r.Name)
	}
	// c reports nothing but is up, so it counts, at 0; old is not listed.
	if strings.Join(names, ",") != "a,c" {
		t.Errorf("replicas = %v, want a,c", names)
	}
	if len(obs.Missing) != 1 || obs.Missing[0].Name != "b" {
		t.Errorf("missing = %+v, want b", obs.Missing)
	}
}

func TestUnreadableWalStateLeavesTheReplicaOut(t *testing.T) {
	src, _ := testSource(contract, map[string]any{
		"act": vec("pod=a", 1.0, "pod=b", 1.0),
		"wal": vec("pod=a", 7.0, "pod=b", 2.0),
	})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Replicas) != 1 || obs.Replicas[0].Name != "b" || obs.Replicas[0].WalSaturation != pressure.Saturated {
		t.Errorf("replicas = %+v, want b Saturated", obs.Replicas)
	}
	if len(obs.Missing) != 1 || obs.Missing[0].Name != "a" || !strings.Contains(obs.Missing[0].Err.Error(), "walStateQuery") {
		t.Errorf("missing = %+v, want a named with walStateQuery", obs.Missing)
	}

	// When that was the only replica, the sample fails and says why.
	src, _ = testSource(contract, map[string]any{"wal": vec("pod=a", -1.0)})
	if _, err := src.Observe(context.Background()); !errors.Is(err, ErrNoReplicas) || !strings.Contains(err.Error(), "a (walStateQuery") {
		t.Errorf("err = %v", err)
	}
}

func TestUnusableResultsFailTheSample(t *testing.T) {
	for name, tc := range map[string]struct {
		answer any
		want   string
	}{
		"series without the replica label": {vec("instance=x:1", 1.0), "has no pod label"},
		"scalar":                           {&model.Scalar{Value: 1}, "returned a scalar"},
		"matrix":                           {model.Matrix{}, "returned a matrix"},
	} {
		t.Run(name, func(t *testing.T) {
			src, _ := testSource(contract, map[string]any{"act": tc.answer})
			_, err := src.Observe(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "activationQuery") {
				t.Fatalf("err = %v, want %q naming activationQuery", err, tc.want)
			}
		})
	}
}

func TestObserveHonoursTheDeadline(t *testing.T) {
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	src, _ := testSource(contract, map[string]any{"act": hang, "splits": hang})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := src.Observe(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("Observe took %v past a 50ms deadline", el)
	}

	// With no deadline from the caller, QueryTimeout bounds the sample.
	src.timeout = 50 * time.Millisecond
	if _, err := src.Observe(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the query timeout", err)
	}
}

func TestResourceQueryIsTheResourceDimension(t *testing.T) {
	src, _ := testSource(Queries{Resource: "res"}, map[string]any{"res": vec("pod=a", 0.8)})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := pressure.ComputeCollector{}.Collect(obs)
	if c.Resource != 0.8 {
		t.Errorf("resource = %v, want 0.8", c.Resource)
	}
}

func TestCustomReplicaLabel(t *testing.T) {
	api := &fakeAPI{answers: map[string]any{"act": vec("instance=h:1", 3.0)}}
	src := newSource(api, Options{ServerAddress: "http://p", Queries: Queries{Activation: "act"}, ReplicaLabel: "instance"})
	obs, err := src.Observe(context.Background())
	if err != nil || len(obs.Replicas) != 1 || obs.Replicas[0].Name != "h:1" {
		t.Fatalf("obs = %+v, err = %v", obs, err)
	}
}
