package promsource_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/target"
)

// A CPU rate read from the demo is off by the time its reads took: the
// demo advances its CPU counter when it answers, while a rate divides by
// the times its two reads were sent (Prometheus' scrape timestamps, the
// scrape source's request times). With each answer at most delay after
// its read was sent and gap between the two sends, the rate read is
// u·(1+e) for a utilisation u with |e| <= delay/gap. The bounds below
// measure delay and gap on every comparison, so a busy machine widens
// them by exactly what it slowed (a fixed 0.15 once failed on a 2-core
// machine under -race: 0.80 against 0.96).

// cpuSlack absorbs float rounding only.
const cpuSlack = 0.005

// promCPUError is the largest relative error e of a CPU rate Prometheus
// answers now: the slowest scrape of the last 10 s over the shortest gap
// between two scrapes of one replica in that time.
func (f *fixture) promCPUError(t *testing.T) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	slowest, err := f.queryFloat(ctx, `max(max_over_time(scrape_duration_seconds{job="demo"}[10s]))`)
	if err != nil {
		t.Fatal(err)
	}
	v, _, _, err := f.prom.API.Query(ctx, `process_cpu_seconds_total{job="demo"}[10s]`, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	gap := math.Inf(1)
	for _, series := range v.(model.Matrix) {
		for k := 1; k < len(series.Values); k++ {
			gap = min(gap, series.Values[k].Timestamp.Sub(series.Values[k-1].Timestamp).Seconds())
		}
	}
	if math.IsInf(gap, 1) || gap <= slowest {
		t.Fatalf("scrapes every %v s at the least, the slowest taking %v s: no rate is measured", gap, slowest)
	}
	return slowest / gap
}

func (f *fixture) queryFloat(ctx context.Context, query string) (float64, error) {
	v, _, _, err := f.prom.API.Query(ctx, query, time.Time{})
	if err != nil {
		return 0, err
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 {
		return 0, fmt.Errorf("%s: %v, want one sample", query, v)
	}
	return float64(vec[0].Value), nil
}

// cpuBound is how far a CPU rate read with relative error at most e may be
// from utilisation u.
func cpuBound(u, e float64) float64 { return u*e + cpuSlack }

// agreement reads the same replicas both ways, by scraping them and by
// asking the Prometheus that scrapes them, under steady load and again after
// the load moved, and requires the same pressure.
func (f *fixture) agreement(t *testing.T) {
	var targets []target.Target
	for _, u := range f.urls {
		tg, err := target.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	scr, err := scrape.New(scrape.Options{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	defer scr.Close()
	prom := f.source(t, nil)

	compare := func(phase string) {
		// The scrape source's CPU rate needs two of its own scrapes;
		// each read's delay is at most the time its Observe took.
		first := time.Now()
		if _, err := observe(t, scr); err != nil {
			t.Fatal(err)
		}
		firstTook := time.Since(first)
		time.Sleep(time.Second)
		second := time.Now()
		byScrape, err := observe(t, scr)
		if err != nil {
			t.Fatal(err)
		}
		scrapeErr := max(firstTook, time.Since(second)).Seconds() / (second.Sub(first) - firstTook).Seconds()
		byProm, err := observe(t, prom)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, phase, byScrape, byProm, scrapeErr, f.promCPUError(t))
		agreeQueue(t, phase, byScrape.Queue, byProm.Queue, counterWindow*sumRPS(f))
	}
	compare("steady load")

	// The saturated replica drains and the split finishes; replica 0 runs
	// at capacity on a backlog of 40, which then holds still.
	f.replicas[2].SetLoad(10)
	f.replicas[1].SetSplits(0)
	f.replicas[0].SetLoad(100)
	f.replicas[0].SetBacklog(40)
	f.waitLoad(t, 2, 0.10)
	f.waitLoad(t, 0, 1)
	compare("after the load moved")

	f.freezeQueue(t)
	byScrape, err := observe(t, scr)
	if err != nil {
		t.Fatal(err)
	}
	byProm, err := observe(t, prom)
	if err != nil {
		t.Fatal(err)
	}
	agreeQueue(t, "queue at rest", byScrape.Queue, byProm.Queue, 0)
}

// counterWindow is how many seconds of counting the two reads of a counter
// under load may be apart: Prometheus' value is from its last scrape (a
// second's interval), the scrape source's from now, and on a loaded machine
// under -race either may lag a little more.
const counterWindow = 5

// sumRPS is the work the replicas count per second, arrivals and runs alike
// while no backlog drains.
func sumRPS(f *fixture) float64 {
	total := 0.0
	for _, w := range f.replicas {
		total += w.State().RPS
	}
	return total
}

// queueSum is the replicas' queues summed as they stand now.
func (f *fixture) queueSum() pressure.QueueObservation {
	var q pressure.QueueObservation
	for _, w := range f.replicas {
		s := w.State().Queue
		q.Arrivals += s.Arrivals
		q.Runs += s.Runs
		q.RunSeconds += s.RunSeconds
	}
	return q
}

// freezeQueue stops the load, lets the backlog drain, and waits until
// Prometheus holds every replica's final counters: from then on both reads
// see the same values and must agree exactly.
func (f *fixture) freezeQueue(t *testing.T) {
	for _, w := range f.replicas {
		w.SetLoad(0)
	}
	time.Sleep(time.Second) // a backlog of 40 drains at 100 a second
	want := map[string]float64{}
	for i, w := range f.replicas {
		s := w.State().Queue
		want[exposition.QueueArrivals+" "+f.urls[i]] = s.Arrivals
		want[exposition.QueueRunDuration+"_sum "+f.urls[i]] = s.RunSeconds
		want[exposition.QueueRunDuration+"_count "+f.urls[i]] = s.Runs
	}
	q := `{__name__=~"` + exposition.QueueArrivals + `|` + exposition.QueueRunDuration + `_(sum|count)",job="demo"}`
	f.prom.WaitFor(t, q, 15*time.Second, func(v model.Vector) bool {
		if len(v) != len(want) {
			return false
		}
		for _, smp := range v {
			if w, ok := want[string(smp.Metric[model.MetricNameLabel])+" "+string(smp.Metric["pod"])]; !ok || float64(smp.Value) != w {
				return false
			}
		}
		return true
	})
}

// agreeQueue requires the same queue both ways; counters may differ by what
// tolerance arrivals (and as many runs) take to count.
func agreeQueue(t *testing.T, phase string, byScrape, byProm *pressure.QueueObservation, tolerance float64) {
	t.Helper()
	if byScrape == nil || byProm == nil {
		t.Fatalf("%s: queue scraped %+v, from prometheus %+v", phase, byScrape, byProm)
	}
	s, p := *byScrape, *byProm
	for _, c := range []struct {
		name   string
		sv, pv float64
		tol    float64
	}{
		{"arrivals", s.Arrivals, p.Arrivals, tolerance},
		{"runs", s.Runs, p.Runs, tolerance},
		{"run seconds", s.RunSeconds, p.RunSeconds, tolerance * 0.05},
	} {
		if math.Abs(c.sv-c.pv) > c.tol {
			t.Errorf("%s: %s scraped %v, from prometheus %v (tolerance %v)", phase, c.name, c.sv, c.pv, c.tol)
		}
	}
	s.Arrivals, s.Runs, s.RunSeconds = 0, 0, 0
	p.Arrivals, p.Runs, p.RunSeconds = 0, 0, 0
	if !reflect.DeepEqual(s, p) {
		t.Errorf("%s: queue\n  scraped    %+v\n  prometheus %+v", phase, s, p)
	}
	t.Logf("%s: arrivals %.1f/%.1f runs %.0f/%.0f backlog %+v busy %v (scraped/prometheus)",
		phase, byScrape.Arrivals, byProm.Arrivals, byScrape.Runs, byProm.Runs, s.Backlog, s.Busy)
}

// agree requires the two reads equal but for CPU, whose rates may differ by
// their relative errors scrapeErr and promErr (see promCPUError).
func agree(t *testing.T, phase string, byScrape, byProm pressure.Observation, scrapeErr, promErr float64) {
	t.Helper()
	if len(byScrape.Replicas) != len(byProm.Replicas) {
		t.Fatalf("%s: %d replicas scraped, %d from prometheus", phase, len(byScrape.Replicas), len(byProm.Replicas))
	}
	// The utilisation behind both reads is at most this, and a difference
	// of the two at most bound.
	bound := func(s, p float64) float64 {
		return cpuBound(max(s/(1-scrapeErr), p/(1-promErr)), scrapeErr+promErr)
	}
	for i, s := range byScrape.Replicas {
		p := byProm.Replicas[i]
		cpuS, cpuP := s.CPUUtilisation, p.CPUUtilisation
		s.CPUUtilisation, p.CPUUtilisation = 0, 0
		if s != p || math.Abs(cpuS-cpuP) > bound(cpuS, cpuP) {
			t.Errorf("%s: replica %d\n  scraped    %+v cpu %.4f\n  prometheus %+v cpu %.4f (CPU may differ by %.3f: reads off by %.3f and %.3f at most)",
				phase, i, s, cpuS, p, cpuP, bound(cpuS, cpuP), scrapeErr, promErr)
		}
	}
	t.Logf("%s: CPU reads off by %.3f (scraped) and %.3f (prometheus) at most", phase, scrapeErr, promErr)
	if !reflect.DeepEqual(byScrape.Trees, byProm.Trees) {
		t.Errorf("%s: trees\n  scraped    %+v\n  prometheus %+v", phase, byScrape.Trees, byProm.Trees)
	}

	// And so the folded pressure, which is what the signal is made of.
	c := pressure.ComputeCollector{ActivationWorkingSetTarget: pressure.DefaultActivationWorkingSetTarget}
	cs, cp := c.Collect(byScrape), c.Collect(byProm)
	if cs.ReplicaCount != cp.ReplicaCount || cs.WalSaturation != cp.WalSaturation || cs.Activation != cp.Activation ||
		cs.WalDispatch != cp.WalDispatch || math.Abs(cs.Resource-cp.Resource) > bound(cs.Resource, cp.Resource) {
		t.Errorf("%s: compute pressure\n  scraped    %+v\n  prometheus %+v", phase, cs, cp)
	}
	now := time.Now()
	ss := pressure.NewStorageCollector(pressure.DefaultStorageOptions()).Collect(byScrape.Trees, now)
	sp := pressure.NewStorageCollector(pressure.DefaultStorageOptions()).Collect(byProm.Trees, now)
	if !reflect.DeepEqual(ss, sp) {
		t.Errorf("%s: storage pressure\n  scraped    %+v\n  prometheus %+v", phase, ss, sp)
	}
	t.Logf("%s: activation %.3f/%.3f resource %.3f/%.3f wal %v/%v across %d replicas (scraped/prometheus)",
		phase, cs.Activation, cp.Activation, cs.Resource, cp.Resource, cs.WalSaturation, cp.WalSaturation, cs.ReplicaCount)
}
