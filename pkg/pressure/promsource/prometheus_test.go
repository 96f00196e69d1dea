package promsource_test

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/internal/promtest"
	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promkind"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// fixture is one real Prometheus scraping demo-workload replicas on
// loopback, shared by the subtests because a server takes about six
// seconds to show its first scrape.
type fixture struct {
	prom     *promtest.Server
	replicas []*demo.Workload
	urls     []string // replica i's metrics URL, also its pod label
	dead     string   // a target nobody listens on
}

// Loads of the three replicas, per 100 req/s of capacity: Healthy,
// Throttled (>= 0.75) and Saturated (>= 0.95).
var loads = []float64{30, 80, 97}

func startFixture(t *testing.T) *fixture {
	f := &fixture{}
	var targets []promtest.Target
	for i, rps := range loads {
		w := demo.New(demo.Config{Queue: true, QueueClass: queueClasses[i]})
		w.SetLoad(rps)
		if i == 1 {
			w.SetSplits(2)
		}
		setQueue(i, w)
		srv := httptest.NewServer(w.Handler())
		t.Cleanup(srv.Close)
		url := srv.URL + "/metrics"
		f.replicas, f.urls = append(f.replicas, w), append(f.urls, url)
		targets = append(targets, promtest.Target{URL: url, Labels: map[string]string{"job": "demo", "pod": url}})
	}
	f.dead = "http://" + closedPort(t) + "/metrics"
	targets = append(targets, promtest.Target{URL: f.dead, Labels: map[string]string{"job": "demo", "pod": f.dead}})

	f.prom = promtest.Start(t, targets, promtest.Options{})
	// Every replica scraped at least twice, so irate has a CPU rate, and
	// that two seconds ago already: the subtests that evaluate at an
	// aligned instant (up to 1.5 s back) or at a fixed past one read
	// every replica there too.
	f.prom.WaitSeries(t, `irate(process_cpu_seconds_total{job="demo"}[5m] offset 2s)`, len(loads), 30*time.Second)
	return f
}

// The replicas run in queue mode: replica 0's backlog is of class
// critical, the others' of class normal.
var queueClasses = []string{"critical", "normal", "normal"}

// resStart is a reservation's start, 2026-01-01T00:00:00Z.
const resStart = 1767225600

// setQueue sets the parts of replica i's queue the load does not drive:
// retrying and due work, a plain reserved gauge, reservation nightly from
// two replicas that disagree (joined: the earliest start, the latest end,
// the most slots), and reservation open, which one replica holds open
// (end 0) and another closes: open outlasts any end.
func setQueue(i int, w *demo.Workload) {
	switch i {
	case 0:
		w.SetDue(1)
		w.SetReserved(2)
		w.SetReservation("open", demo.Reservation{Start: resStart, Slots: 1})
	case 1:
		w.SetRetrying(3)
		w.SetReservation("nightly", demo.Reservation{Start: resStart, End: resStart + 3600, Slots: 2})
		w.SetReservation("open", demo.Reservation{Start: resStart, End: resStart + 3600, Slots: 1})
	case 2:
		w.SetRetrying(2)
		w.SetReservation("nightly", demo.Reservation{Start: resStart + 60, End: resStart + 7200, Slots: 3})
		w.SetReservation("adhoc", demo.Reservation{Slots: 1})
	}
}

// wantReservations is what setQueue's reservations join to.
var wantReservations = []pressure.Reservation{
	{Slots: 1}, // adhoc: open on both sides
	{Start: time.Unix(resStart, 0).UTC(), End: time.Unix(resStart+7200, 0).UTC(), Slots: 3},
	{Start: time.Unix(resStart, 0).UTC(), Slots: 1}, // open: no end
	{Slots: 2}, // the plain gauge
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func (f *fixture) source(t *testing.T, edit func(*promsource.Queries)) *promsource.Source {
	q := promsource.DefaultQueries(exposition.DefaultNames(), `job="demo"`, 0)
	if edit != nil {
		edit(&q)
	}
	src, err := promsource.New(promsource.Options{ServerAddress: f.prom.URL, Queries: q})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func observe(t *testing.T, src pressure.Source) (pressure.Observation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return src.Observe(ctx)
}

func TestAgainstPrometheus(t *testing.T) {
	start := time.Now()
	f := startFixture(t)
	t.Logf("prometheus up and every replica scraped twice after %v", time.Since(start).Round(time.Millisecond))
	defer func() { t.Logf("whole test: %v", time.Since(start).Round(time.Millisecond)) }()

	t.Run("folds one observation per replica", func(t *testing.T) {
		obs, err := observe(t, f.source(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		cpuErr := f.promCPUError(t)
		if len(obs.Replicas) != len(loads) || len(obs.Missing) != 0 || obs.SplitsErr != nil {
			t.Fatalf("obs = %+v", obs)
		}
		for _, r := range obs.Replicas {
			i := slices.Index(f.urls, r.Name) // sorted by name, which is not load order
			if i < 0 {
				t.Fatalf("replica %q is not one of %v", r.Name, f.urls)
			}
			st := f.replicas[i].State()
			if r.WorkingSet != st.WorkingSet || r.MemoryUsedBytes != st.MemoryBytes ||
				r.MemoryLimitBytes != st.MemoryLimitBytes || int(r.WalSaturation) != st.WalState ||
				!r.HasSplits || r.SplitsInFlight != st.Splits || math.Abs(r.CPUUtilisation-st.Load) > cpuBound(st.Load, cpuErr) {
				t.Errorf("replica %d = %+v, demo state %+v", i, r, st)
			}
		}
		if len(obs.Trees) != 1 || obs.Trees[0].Tree != "wal" || obs.Trees[0].Saturation != pressure.Saturated ||
			strings.Join(obs.Trees[0].PartitionAccounts, ",") != "account-a,account-b" {
			t.Errorf("trees = %+v", obs.Trees)
		}
	})

	t.Run("a CPU limit gauge of 0 falls back to cpuLimitCores", func(t *testing.T) {
		// The splits gauge stands in for the limit gauge: 2 on replica 1,
		// 0 on the others, which must read as no gauge (so 1 core, the
		// fallback), not as a division by 0.
		names := exposition.DefaultNames()
		names.CPULimitCores = exposition.SplitsInFlight
		q := promsource.DefaultQueries(names, `job="demo"`, 1)
		src, err := promsource.New(promsource.Options{ServerAddress: f.prom.URL, Queries: q})
		if err != nil {
			t.Fatal(err)
		}
		obs, err := observe(t, src)
		if err != nil {
			t.Fatal(err)
		}
		cpuErr := f.promCPUError(t)
		if len(obs.Replicas) != len(loads) {
			t.Fatalf("replicas %+v", obs.Replicas)
		}
		for _, r := range obs.Replicas {
			i := slices.Index(f.urls, r.Name)
			want := f.replicas[i].State().Load
			if i == 1 {
				want /= 2
			}
			if math.Abs(r.CPUUtilisation-want) > cpuBound(want, cpuErr) {
				t.Errorf("replica %d CPU %v, want %v", i, r.CPUUtilisation, want)
			}
		}
	})

	t.Run("reads the queue of every replica", func(t *testing.T) {
		obs, err := observe(t, f.source(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		q := obs.Queue
		if q == nil {
			t.Fatal("no queue")
		}
		// Gauges hold still under a steady load below capacity.
		want := []pressure.ClassBacklog{{Class: "critical"}, {Class: "normal", Retrying: 5}}
		busy := 0.0
		for _, w := range f.replicas {
			busy += w.State().Queue.Busy
		}
		if !reflect.DeepEqual(q.Backlog, want) || q.Due != 1 || q.Busy != busy || !reflect.DeepEqual(q.Reservations, wantReservations) {
			t.Errorf("queue %+v, want backlog %+v, due 1, busy %v, reservations %+v", q, want, busy, wantReservations)
		}
		// Counters trail the replicas' by at most a few scrape intervals.
		sum := f.queueSum()
		if d := sum.Arrivals - q.Arrivals; d < 0 || d > counterWindow*sumRPS(f) {
			t.Errorf("arrivals %v, replicas now at %v", q.Arrivals, sum.Arrivals)
		}
		if q.Runs <= 0 || math.Abs(q.RunSeconds/q.Runs-0.05) > 1e-9 {
			t.Errorf("runs %v taking %vs, want a mean of the demo's 50ms", q.Runs, q.RunSeconds)
		}
	})

	t.Run("replicas query names the replica that is down", func(t *testing.T) {
		obs, err := observe(t, f.source(t, func(q *promsource.Queries) { q.Replicas = `up{job="demo"}` }))
		if err != nil {
			t.Fatal(err)
		}
		if len(obs.Replicas) != len(loads) || len(obs.Missing) != 1 || obs.Missing[0].Name != f.dead {
			t.Errorf("replicas %d, missing %+v; want %d and %s", len(obs.Replicas), obs.Missing, len(loads), f.dead)
		}
	})

	t.Run("an empty dimension reads 0", func(t *testing.T) {
		obs, err := observe(t, f.source(t, func(q *promsource.Queries) { q.Activation = `barometer_activations{job="nothing"}` }))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range obs.Replicas {
			if r.WorkingSet != 0 {
				t.Errorf("%s working set = %v, want 0", r.Name, r.WorkingSet)
			}
		}
		if len(obs.Replicas) != len(loads) {
			t.Errorf("%d replicas, want %d", len(obs.Replicas), len(loads))
		}
	})

	t.Run("nothing at all is no replicas", func(t *testing.T) {
		q := promsource.DefaultQueries(exposition.DefaultNames(), `job="nothing"`, 0)
		src, err := promsource.New(promsource.Options{ServerAddress: f.prom.URL, Queries: q})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := observe(t, src); !errors.Is(err, promsource.ErrNoReplicas) {
			t.Errorf("err = %v, want ErrNoReplicas", err)
		}
	})

	t.Run("a query error fails the sample", func(t *testing.T) {
		_, err := observe(t, f.source(t, func(q *promsource.Queries) { q.WalState = "sum(" }))
		if err == nil || !strings.Contains(err.Error(), "walStateQuery") || !strings.Contains(err.Error(), "bad_data") {
			t.Errorf("err = %v, want the server's bad_data naming walStateQuery", err)
		}
	})

	t.Run("a failed splits query fails open", func(t *testing.T) {
		obs, err := observe(t, f.source(t, func(q *promsource.Queries) { q.SplitsInFlight = "sum(" }))
		if err != nil {
			t.Fatal(err)
		}
		if obs.SplitsErr == nil || len(obs.Replicas) != len(loads) {
			t.Errorf("SplitsErr %v, replicas %+v", obs.SplitsErr, obs.Replicas)
		}
		for _, r := range obs.Replicas {
			if r.HasSplits {
				t.Errorf("%s reports a split footprint the failed query cannot have read", r.Name)
			}
		}
	})

	t.Run("an aggregate without the replica label fails the sample", func(t *testing.T) {
		_, err := observe(t, f.source(t, func(q *promsource.Queries) { q.Activation = "sum(barometer_activations)" }))
		if err == nil || !strings.Contains(err.Error(), "has no pod label") {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("metadata to source, through the allow-list", func(t *testing.T) {
		parse := func(spec string) (sourcekind.Spec, error) {
			list, err := allow.Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			s := trigger.NewSchema(promkind.Kind(list, nil))
			md, err := s.Parse(map[string]string{
				"source": "prometheus", "serverAddress": strings.Replace(f.prom.URL, "127.0.0.1", "localhost", 1),
				"selector": `job="demo"`,
			}, time.Second)
			return md.Source, err
		}
		// The name matches a host pattern, but it resolves into loopback,
		// which only a CIDR entry allows: refused when dialled.
		spec, err := parse("localhost")
		if err != nil {
			t.Fatal(err)
		}
		src, err := spec.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		var refused *allow.RefusedError
		if _, err := observe(t, src); !errors.As(err, &refused) {
			t.Errorf("err = %v, want the allow-list's refusal", err)
		}
		// Allowed explicitly, the same metadata reads the replicas.
		if spec, err = parse("localhost,127.0.0.0/8,::1"); err != nil {
			t.Fatal(err)
		}
		if src, err = spec.New(nil); err != nil {
			t.Fatal(err)
		}
		if obs, err := observe(t, src); err != nil || len(obs.Replicas) != len(loads) {
			t.Errorf("obs %+v, err %v", obs, err)
		}
	})

	t.Run("two aligned replicas read identical data", func(t *testing.T) {
		// Two scaler replicas sample 700 ms apart within one 1 s interval;
		// aligned, both evaluate at the interval's start and so read the
		// same instant of the same series.
		q := promsource.DefaultQueries(exposition.DefaultNames(), `job="demo"`, 0)
		// Instants in the past by the time they are read (a second
		// after the last, once its scrape is stored), so what is read
		// there no longer changes.
		const missed = 4
		base := time.Now().Truncate(time.Second)
		time.Sleep(time.Until(base.Add((missed + 1) * time.Second)))
		read := func(offset time.Duration) pressure.Observation {
			src, err := promsource.New(promsource.Options{ServerAddress: f.prom.URL, Queries: q, Align: time.Second,
				Now: func() time.Time { return base.Add(offset) }})
			if err != nil {
				t.Fatal(err)
			}
			obs, err := observe(t, src)
			if err != nil {
				t.Fatal(err)
			}
			return obs
		}
		a, b := read(100*time.Millisecond), read(800*time.Millisecond)
		if !a.ObservedAt.Equal(b.ObservedAt) || !reflect.DeepEqual(a.Replicas, b.Replicas) {
			t.Errorf("aligned replicas disagree:\n%+v\n%+v", a, b)
		}

		// A replica that starts later folds the instants it missed from
		// the past (the sampler's backfill), all in one range query, and
		// reads what was read live at each.
		live := make([]pressure.Observation, missed)
		for k := range live {
			live[k] = read(time.Duration(k)*time.Second + 200*time.Millisecond)
		}
		pool := querypool.New(0)
		reg := prometheus.NewRegistry()
		reg.MustRegister(pool)
		late, err := promsource.New(promsource.Options{ServerAddress: f.prom.URL, Queries: q, Align: time.Second, Pool: pool,
			Now: func() time.Time { return base.Add(time.Minute) }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		past, err := late.ObservePast(ctx, base, time.Second, missed)
		if err != nil {
			t.Fatal(err)
		}
		if n := counter(t, reg, "barometer_prometheus_queries_total"); n != 1 || len(past) != missed {
			t.Fatalf("%d instants of the past read in %v queries, want %d in one", len(past), n, missed)
		}
		for k, p := range past {
			if p.Err != nil || !p.At.Equal(base.Add(time.Duration(k)*time.Second)) {
				t.Fatalf("past instant %d: at %v, %v", k, p.At, p.Err)
			}
			if got, want := p.Observation, live[k]; !got.ObservedAt.Equal(want.ObservedAt) || !got.MeasuredAt.Equal(want.MeasuredAt) || !reflect.DeepEqual(got.Replicas, want.Replicas) {
				t.Errorf("instant %d: the past read differs from the live one:\n%+v\n%+v", k, got, want)
			}
		}
	})

	t.Run("one combined query answers what the queries answer alone", func(t *testing.T) {
		q := promsource.DefaultQueries(exposition.DefaultNames(), `job="demo"`, 1)
		q.Replicas = `up{job="demo"}`
		src, err := promsource.New(promsource.Options{ServerAddress: f.prom.URL, Queries: q})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// A past instant: what was stored there no longer changes.
		at := time.Now().Add(-2 * time.Second)
		combined, apart, err := promsource.AnswersBothWays(ctx, src, at)
		if err != nil {
			t.Fatal(err)
		}
		series := 0
		for key, want := range apart {
			if got := combined[key]; (len(got) > 0 || len(want) > 0) && !reflect.DeepEqual(got, want) {
				t.Errorf("%s combined:\n  %v\nalone:\n  %v", key, got, want)
			}
			series += len(want)
		}
		if series == 0 {
			t.Fatal("no series either way: nothing compared")
		}
		t.Logf("%d dimensions, %d series, equal both ways", len(apart), series)
	})

	t.Run("agrees with the scrape source", func(t *testing.T) { f.agreement(t) })
}

// waitLoad waits until the server's irate of replica i shows its new load.
func (f *fixture) waitLoad(t *testing.T, i int, load float64) {
	q := `irate(process_cpu_seconds_total{pod="` + f.urls[i] + `"}[5m])`
	f.prom.WaitFor(t, q, 15*time.Second, func(v model.Vector) bool {
		return len(v) == 1 && math.Abs(float64(v[0].Value)-load) < 0.01
	})
}
