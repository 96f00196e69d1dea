package scrape

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/body"
)

// only serves w's exposition in one format, whatever the client asks for.
func only(w *demo.Workload, t expfmt.FormatType) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		fams, err := w.Registry().Gather()
		if err != nil {
			http.Error(rw, err.Error(), 500)
			return
		}
		format := expfmt.NewFormat(t)
		rw.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(rw, format)
		for _, f := range fams {
			_ = enc.Encode(f)
		}
	})
}

func TestProtobufAndTextAgree(t *testing.T) {
	clk := newClock()
	w := demo.New(demo.Config{Now: clk.Now, PaddingSeries: 50})
	w.SetLoad(85)
	w.SetSplits(2)
	text := startOn(t, "127.0.0.1:0", only(w, expfmt.TypeTextPlain))
	proto := startOn(t, "127.0.0.1:0", only(w, expfmt.TypeProtoDelim))

	read := func(url string) pressure.Observation {
		src := newSource(t, Options{Targets: targets(t, url), Now: clk.Now})
		if _, err := src.Observe(context.Background()); err != nil {
			t.Fatal(err)
		}
		clk.Advance(2 * time.Second)
		obs, err := src.Observe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return obs
	}
	a, b := read(text.URL+"/metrics"), read(proto.URL+"/metrics")
	ra, rb := a.Replicas[0], b.Replicas[0]
	ra.Name, rb.Name = "", ""
	if ra != rb {
		t.Errorf("text %+v\nprotobuf %+v", ra, rb)
	}
	if !near(ra.CPUUtilisation, 0.85) || ra.WalSaturation != pressure.Throttled || !ra.HasSplits || ra.SplitsInFlight != 2 ||
		ra.MemoryLimitBytes != 512<<20 || ra.WorkingSet != 0.85*80000 || !ra.HasWorkingSet {
		t.Errorf("read %+v", ra)
	}
	want := []pressure.TreeObservation{{
		Tree: "wal", RetainedBytes: 638876385, RetainedBytesCeiling: 1 << 30,
		Saturation: pressure.Throttled, PartitionAccounts: []string{"account-a", "account-b"},
	}}
	for _, obs := range []pressure.Observation{a, b} {
		if fmt.Sprint(obs.Trees) != fmt.Sprint(want) {
			t.Errorf("trees %+v, want %+v", obs.Trees, want)
		}
	}
}

func TestCPULimitFallbackAndReset(t *testing.T) {
	clk := newClock()
	var cpu atomic.Uint64 // the counter's value, float64 bits
	set := func(v float64) { cpu.Store(math.Float64bits(v)) }
	body := func() string {
		return fmt.Sprintf("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\nprocess_resident_memory_bytes 100\n",
			math.Float64frombits(cpu.Load()))
	}
	srv := startOn(t, "127.0.0.1:0", http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(rw, body())
	}))
	for _, tc := range []struct {
		limit float64
		want  float64
	}{{2, 0.75}, {0, 0}} {
		set(10)
		src := newSource(t, Options{Targets: targets(t, srv.URL), Now: clk.Now, CPULimitCores: tc.limit})
		if _, err := src.Observe(context.Background()); err != nil {
			t.Fatal(err)
		}
		set(13)
		clk.Advance(2 * time.Second)
		obs, err := src.Observe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r := obs.Replicas[0]
		if !near(r.CPUUtilisation, tc.want) || r.MemoryLimitBytes != 0 || r.MemoryUsedBytes != 100 {
			t.Errorf("limit %v: %+v, want CPU %v and no memory ceiling", tc.limit, r, tc.want)
		}
		// A restart resets the counter: no rate, rather than a negative one.
		set(1)
		clk.Advance(2 * time.Second)
		if obs, _ = src.Observe(context.Background()); obs.Replicas[0].CPUUtilisation != 0 {
			t.Errorf("after reset: %+v", obs.Replicas[0])
		}
	}
}

func TestBrokenExporters(t *testing.T) {
	good := startDemo(t, 10, demo.Config{})
	cases := map[string]struct{ body, want string }{
		"wal":        {"barometer_wal_saturation_state 7\n", "barometer_wal_saturation_state"},
		"tree state": {"barometer_wal_tree_saturation_state{tree=\"t\"} NaN\n", "tree=\"t\""},
		"partition":  {"barometer_wal_partition_account{tree=\"t\",partition=\"-1\",account=\"a\"} 1\n", "partition \"-1\""},
		"syntax":     {"barometer_activations{oops 3\n", "parse text exposition"},
		"binary":     {"barometer_activations \x00\x01\x02\n", "parse text exposition"},
	}
	urls := []string{good.url()}
	names := map[string]string{}
	for name, c := range cases {
		srv := static(t, c.body)
		urls = append(urls, srv.URL+"/metrics")
		names[srv.URL+"/metrics"] = name
	}
	junkProto := garbage(t, string(expfmt.NewFormat(expfmt.TypeProtoDelim)), "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01garbage")
	urls = append(urls, junkProto.URL+"/metrics")
	names[junkProto.URL+"/metrics"] = "proto"
	cases["proto"] = struct{ body, want string }{"", "protobuf"}
	splits := static(t, "barometer_splits_in_flight -3\nbarometer_activations 5\n")
	urls = append(urls, splits.URL)

	src := newSource(t, Options{Targets: targets(t, urls...)})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Replicas) != 2 || len(obs.Missing) != len(cases) {
		t.Fatalf("replicas %+v missing %+v", obs.Replicas, obs.Missing)
	}
	for _, m := range obs.Missing {
		c := cases[names[m.Name]]
		if !strings.Contains(m.Err.Error(), c.want) {
			t.Errorf("%s: %v, want it to mention %q", names[m.Name], m.Err, c.want)
		}
	}
	// A bad split gauge does not drop the replica: the probe fails open.
	if obs.SplitsErr == nil || !strings.Contains(obs.SplitsErr.Error(), splits.URL) {
		t.Errorf("SplitsErr %v", obs.SplitsErr)
	}
}

// TestStorageMerge: trees are merged across replicas by the rules the
// prometheus source folds them by: the largest bytes and ceiling (a NaN is
// no report, never a poisoned max), the worst saturation, placements of
// any value above 0, and a partition on two accounts on the smaller name,
// whichever replica says what (and body's TestFeedTreesInEitherOrder).
func TestStorageMerge(t *testing.T) {
	a := static(t, `barometer_wal_tree_retained_bytes{tree="t1"} 100
barometer_wal_tree_retained_bytes_ceiling{tree="t1"} 1000
barometer_wal_tree_saturation_state{tree="t1"} 0
barometer_wal_partition_account{tree="t1",partition="0",account="acct-a"} 1
barometer_wal_partition_account{tree="t1",partition="2",account="acct-c"} 1
barometer_wal_partition_account{tree="t1",partition="1",account="stale"} 0
barometer_wal_tree_retained_bytes{} 5
`)
	b := static(t, `barometer_wal_tree_retained_bytes{tree="t1"} 300
barometer_wal_tree_saturation_state{tree="t1"} 2
barometer_wal_partition_account{tree="t1",partition="0",account="acct-z"} 1
barometer_wal_partition_account{tree="t1",partition="1",account="acct-b"} 1
barometer_wal_tree_retained_bytes{tree="t0"} 1e300
`)
	c := static(t, `barometer_wal_tree_retained_bytes{tree="t1"} NaN
barometer_wal_tree_retained_bytes_ceiling{tree="t1"} NaN
barometer_wal_partition_account{tree="t1",partition="2",account="acct-b"} 1
barometer_wal_partition_account{tree="t1",partition="3",account="acct-d"} 2
barometer_wal_partition_account{tree="t1",partition="4",account="acct-y"} 1
barometer_wal_partition_account{tree="t1",partition="4",account="acct-x"} 1
barometer_wal_partition_account{tree="t1",partition="5",account="acct-e"} -1
barometer_wal_partition_account{tree="t1",partition="5",account="acct-f"} NaN
`)
	nostore := static(t, "barometer_activations 1\n")
	want := fmt.Sprint([]pressure.TreeObservation{
		{Tree: "t0", RetainedBytes: 1<<63 - 1},
		{Tree: "t1", RetainedBytes: 300, RetainedBytesCeiling: 1000, Saturation: pressure.Saturated,
			PartitionAccounts: []string{"acct-a", "acct-b", "acct-b", "acct-d", "acct-x"}},
	})
	src := newSource(t, Options{Targets: targets(t, a.URL, b.URL, c.URL)})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(obs.Trees); got != want {
		t.Errorf("trees\n got %s\nwant %s", got, want)
	}
	src = newSource(t, Options{Targets: targets(t, nostore.URL)})
	if obs, _ := src.Observe(context.Background()); obs.Trees != nil {
		t.Errorf("no storage series, trees %+v", obs.Trees)
	}
}

func TestRenamedMetrics(t *testing.T) {
	srv := static(t, `# TYPE my_sessions gauge
my_sessions{shard="a"} 30
my_sessions{shard="b"} 20
{"my.wal.state"} 1
barometer_activations 999
`)
	names := exposition.DefaultNames()
	names.Activations = "my_sessions"
	names.WalState = "my.wal.state"
	src := newSource(t, Options{Targets: targets(t, srv.URL), Names: names})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := obs.Replicas[0]; r.WorkingSet != 50 || r.WalSaturation != pressure.Throttled {
		t.Errorf("%+v: want the renamed series, summed", r)
	}
}

// TestProtoLengthPrefixDoesNotAllocate is the same through a scrape: a
// replica that sends 5 bytes announcing a message of the whole response
// limit fails, having cost about what it sent.
func TestProtoLengthPrefixDoesNotAllocate(t *testing.T) {
	const limit = 256 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited")
		w.Write(binary.AppendUvarint(nil, limit-100))
	}))
	t.Cleanup(srv.Close)
	src := newSource(t, Options{Targets: targets(t, srv.URL), MaxResponseBytes: limit})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := src.Observe(context.Background())
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "protobuf message") {
		t.Errorf("err %v, want the truncated protobuf message", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("one sample of a 5-byte body allocated %d MiB", alloc>>20)
	}
}

// TestNegotiation: a client_golang handler answers the Accept header with
// delimited protobuf, and a text-only exporter is read as text.
func TestNegotiation(t *testing.T) {
	w := demo.New(demo.Config{})
	w.SetLoad(40)
	var served atomic.Value
	h := w.Handler()
	srv := startOn(t, "127.0.0.1:0", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(rw, r)
		served.Store(rw.Header().Get("Content-Type"))
	}))
	src := newSource(t, Options{Targets: targets(t, srv.URL)})
	obs, err := src.Observe(context.Background())
	if err != nil || obs.Replicas[0].WorkingSet != 0.4*80000 {
		t.Fatalf("%v %+v", err, obs)
	}
	if ct, _ := served.Load().(string); !strings.HasPrefix(ct, "application/vnd.google.protobuf") {
		t.Errorf("served %q, want delimited protobuf", ct)
	}
}

// A replica exposing more of the contract's series than the limit fails,
// in either format, before the series are parsed; one within it is read.
func TestSeriesLimit(t *testing.T) {
	var text strings.Builder
	for i := range 50 {
		fmt.Fprintf(&text, "barometer_wal_tree_retained_bytes{tree=\"t%d\",partition=\"0\"} 1\n", i)
	}
	text.WriteString("barometer_activations 5\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, text.String()) }))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		limit int
		fails bool
	}{{50, true}, {51, false}} {
		src := newSource(t, Options{Targets: targets(t, srv.URL), SeriesLimit: c.limit})
		obs, err := src.Observe(context.Background())
		switch {
		case c.fails && (err == nil || !strings.Contains(err.Error(), "seriesLimit")):
			t.Errorf("limit %d: %v %+v", c.limit, err, obs)
		case !c.fails && err != nil:
			t.Errorf("limit %d: %v", c.limit, err)
		}
	}
	var buf bytes.Buffer
	for i := range 3 {
		mf := &dto.MetricFamily{Name: proto.String("barometer_activations"), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(float64(i))}}}}
		if _, err := protodelim.MarshalTo(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	n := exposition.DefaultNames()
	f, err := body.NewFamilies(&n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := body.ParseProto(buf.Bytes(), f, 2, nil); !errors.Is(err, body.ErrTooManySeries) {
		t.Errorf("protobuf past the limit: %v", err)
	}
	if _, err := body.ParseProto(buf.Bytes(), f, 3, nil); err != nil {
		t.Errorf("protobuf within the limit: %v", err)
	}
}
