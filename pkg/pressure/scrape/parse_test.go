package scrape

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
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
		ra.MemoryLimitBytes != 512<<20 || ra.WorkingSet != 0.85*80000 {
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
	nostore := static(t, "barometer_activations 1\n")
	src := newSource(t, Options{Targets: targets(t, a.URL, b.URL)})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first := "acct-a"
	if b.URL < a.URL {
		first = "acct-z" // the first replica by name wins a contested partition
	}
	want := fmt.Sprint([]pressure.TreeObservation{
		{Tree: "t0", RetainedBytes: 1<<63 - 1},
		{Tree: "t1", RetainedBytes: 300, RetainedBytesCeiling: 1000, Saturation: pressure.Saturated,
			PartitionAccounts: []string{first, "acct-b", "acct-c"}},
	})
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

func TestFilterText(t *testing.T) {
	long := strings.Repeat("x", 3*readerSize)
	in := "# HELP barometer_activations Working set.\n" +
		"# TYPE barometer_activations gauge\n" +
		"barometer_activations{a=\"" + long + "\"} 1\n" +
		"   \t barometer_activations{a=\"2\"} 2\n" +
		"# HELP go_goroutines " + long + "\n" +
		"go_goroutines 7\n" +
		"go_goroutines_extra{" + long + "\n" +
		"# a plain comment\n" +
		"\n" +
		"{\"quoted.name\"} 3\n" +
		"# TYPE \"quoted.name\" gauge\n" +
		"barometer_activations_total 9\n" +
		"barometer_activations 4"
	want := "# HELP barometer_activations Working set.\n" +
		"# TYPE barometer_activations gauge\n" +
		"barometer_activations{a=\"" + long + "\"} 1\n" +
		"   \t barometer_activations{a=\"2\"} 2\n" +
		"{\"quoted.name\"} 3\n" +
		"# TYPE \"quoted.name\" gauge\n" +
		"barometer_activations 4"
	var out bytes.Buffer
	r := bufio.NewReaderSize(strings.NewReader(in), readerSize)
	if err := filterText(r, &out, wantSet{"barometer_activations": {}}); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("filtered:\n%.300s\nwant:\n%.300s", out.String(), want)
	}
}

func TestFilterProtoRefusesHugeLength(t *testing.T) {
	// A length prefix of 1 GiB must not allocate 1 GiB.
	in := []byte{0x80, 0x80, 0x80, 0x80, 0x04}
	var out bytes.Buffer
	scratch := new([]byte)
	err := filterProto(bufio.NewReader(bytes.NewReader(in)), &out, wantSet{}, 1<<20, scratch)
	if err == nil || cap(*scratch) > 0 {
		t.Fatalf("err %v, scratch %d", err, cap(*scratch))
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
