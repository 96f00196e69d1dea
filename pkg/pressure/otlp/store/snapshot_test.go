package store_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store/storetest"
)

// A store built from another's states reads as that store does, and goes
// on reading as it does when the same pushes follow: a counter that was
// reset before the transfer counts on, not from zero, and its rate spans
// the history that came with it.
func TestImportedStateReadsAsTheOriginal(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	clock := func() time.Time { return now }
	from, err := store.New(store.Options{Now: clock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	push := storetest.ContractPush(3, now)
	ingest := func(st *store.Store, at time.Time, counters float64) {
		t.Helper()
		storetest.SetTime(push, at)
		setCounters(push, counters)
		if res, err := st.Ingest(push.GetResourceMetrics(), allow{}); err != nil || res.Rejected > 0 {
			t.Fatalf("%+v %v", res, err)
		}
	}
	// 100, 200, then a reset to 5, each pushed as it is measured: the
	// store counts on from 205.
	start := now
	for i, v := range []float64{100, 200, 5} {
		now = start.Add(time.Duration(i) * 5 * time.Second)
		ingest(from, now, v)
	}
	now = start.Add(12 * time.Second)

	to, err := store.New(store.Options{Now: clock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r := range from.States() {
		if stored, refused := to.Import(r); stored != 12 || refused != 0 {
			t.Fatalf("import of %s: %d stored, %d refused", r.Name, stored, refused)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d replicas exported, want 3", n)
	}
	q := store.Query{Namespace: "team-a", Selector: map[string]string{"k8s.deployment.name": "shop"},
		Metrics: map[string]bool{exposition.CPUSeconds: true, exposition.QueueRunDuration: true, exposition.Activations: true}, Window: 30 * time.Second}
	same := func(when string) {
		t.Helper()
		a, b := from.Read(q), to.Read(q)
		if len(a) != 3 || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: the imported store reads\n%+v\nthe original\n%+v", when, b, a)
		}
	}
	same("after the import")
	for _, x := range from.Read(q)[0].Series {
		if x.Metric == exposition.CPUSeconds && (x.Value != 205 || !x.HasRate) {
			t.Fatalf("cpu series = %+v, want 205 counted and a rate", x)
		}
	}
	for _, st := range []*store.Store{from, to} {
		ingest(st, now, 15)
	}
	same("after one more push to both")
}

// An imported series never replaces one the store holds at a newer
// point, and a state that does not hold together is refused, not stored.
func TestImportKeepsNewerAndRefusesBroken(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	st, err := store.New(store.Options{Now: func() time.Time { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Ingest(storetest.ContractPush(1, now).GetResourceMetrics(), allow{}); err != nil {
		t.Fatal(err)
	}
	var held store.ReplicaState
	for r := range st.States() {
		held = r
	}
	older := held
	older.Series = nil
	for _, x := range held.Series {
		x.History = []store.Point{{T: x.LastT - int64(time.Second), V: 1, Buckets: x.History[0].Buckets}}
		x.LastT -= int64(time.Second)
		older.Series = append(older.Series, x)
	}
	if stored, refused := st.Import(older); stored != 0 || refused != 0 {
		t.Errorf("an older state: %d stored, %d refused; want it ignored", stored, refused)
	}

	broken := store.ReplicaState{Namespace: "team-a", Name: "shop-9", Series: []store.SeriesState{
		{Metric: "m", Kind: store.Gauge}, // no point
		{Metric: "m", Kind: store.Counter, LastT: 2, History: []store.Point{{T: 2}, {T: 1}}}, // out of order
		{Metric: "h", Kind: store.Histogram, Bounds: []float64{1}, LastT: 1, History: []store.Point{{T: 1, Buckets: []float64{1}}},
			Raw: store.Point{Buckets: []float64{0, 0}}, Offset: store.Point{Buckets: []float64{0, 0}}}, // buckets short of the bounds
		{Metric: "m", Kind: store.Gauge, LastT: 1, History: []store.Point{{T: 1}}, Labels: []store.Label{{Name: "b"}, {Name: "a"}}},
	}}
	if stored, refused := st.Import(broken); stored != 0 || refused != 4 {
		t.Errorf("broken states: %d stored, %d refused; want all 4 refused", stored, refused)
	}
	if got := st.Read(store.Query{Namespace: "team-a", Selector: map[string]string{"service.name": "shop"}, Metrics: map[string]bool{"m": true}}); len(got) != 1 {
		t.Errorf("read %+v, want only shop-0 (a replica left without series is not kept)", got)
	}
}

// HeldSince starts at the store's creation and moves back only.
func TestHeldSince(t *testing.T) {
	now := time.Unix(1000, 0)
	st, err := store.New(store.Options{Now: func() time.Time { return now }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !st.HeldSince().Equal(now) {
		t.Fatalf("HeldSince = %v, want the start %v", st.HeldSince(), now)
	}
	st.Restored(now.Add(-time.Hour))
	st.Restored(now.Add(-time.Minute))
	if want := now.Add(-time.Hour); !st.HeldSince().Equal(want) {
		t.Fatalf("HeldSince = %v, want %v", st.HeldSince(), want)
	}
}

// setCounters sets every monotonic sum of a decoded push to v.
func setCounters(req *colmetrics.ExportMetricsServiceRequest, v float64) {
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				for _, dp := range m.GetSum().GetDataPoints() {
					dp.Value = &metricspb.NumberDataPoint_AsDouble{AsDouble: v}
				}
			}
		}
	}
}

// A replica state none of whose series can be stored leaves its
// namespace's memory as it found it: 10,000 such imports (5 MiB of replica
// overheads, were they kept) still leave a 1 MiB namespace room for a
// real replica's state.
func TestRefusedImportsGiveTheirMemoryBack(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	clock := func() time.Time { return now }
	from, err := store.New(store.Options{Now: clock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := from.Ingest(storetest.ContractPush(1, now).GetResourceMetrics(), allow{}); err != nil || res.Rejected > 0 {
		t.Fatalf("%+v %v", res, err)
	}
	to, err := store.New(store.Options{Now: clock, MaxMemoryBytesPerNamespace: 1 << 20, GuaranteedMemoryBytes: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for r := range from.States() {
		for i := range 10_000 {
			empty := store.ReplicaState{Namespace: r.Namespace, Name: fmt.Sprint("empty-", i), Series: []store.SeriesState{{Metric: "m"}}}
			if stored, refused := to.Import(empty); stored != 0 || refused != 1 {
				t.Fatalf("an empty series: %d stored, %d refused", stored, refused)
			}
		}
		if stored, refused := to.Import(r); stored == 0 || refused != 0 {
			t.Fatalf("the real replica after the refused ones: %d stored, %d refused", stored, refused)
		}
	}
}
