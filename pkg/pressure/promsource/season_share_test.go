package promsource

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
)

// rangeAPI answers every range query with one replica at 50 of working
// set at every step, after a millisecond of evaluation, and records the
// ranges it was asked. It is a fake because sharing is a matter of
// timing, which a real server on loopback cannot be made to arrange (the
// real server's answers are TestSeasonalForecastFromPrometheus's).
type rangeAPI struct {
	fakeAPI
	mu     sync.Mutex
	range_ []v1.Range
}

func (g *rangeAPI) QueryRange(ctx context.Context, q string, r v1.Range, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	g.mu.Lock()
	g.range_ = append(g.range_, r)
	g.mu.Unlock()
	time.Sleep(time.Millisecond) // the fake clock's: the evaluation takes a while
	var values []model.SamplePair
	for t := r.Start; !t.After(r.End); t = t.Add(r.Step) {
		values = append(values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: 50})
	}
	return model.Matrix{{Metric: model.Metric{"pod": "a", dimLabel: model.LabelValue(fmt.Sprint(int(dimActivation)))}, Values: values}}, nil, nil, nil
}

// Targets asking the same queries read their history at the same samples
// from a cold start (their phases are their queries'), so each window is
// sent once for all of them, whichever asks first: the others are handed
// the answer kept for the instant.
func TestTargetsAskingTheSameShareTheHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &rangeAPI{}
		pool := querypool.New(0)
		reg := prometheus.NewRegistry()
		reg.MustRegister(pool)
		const targets, interval = 20, 5 * time.Second
		type target struct {
			src     *Source
			compute pressure.ComputeCollector
			longs   []time.Time
		}
		var all []*target
		for i := range targets + 1 {
			compute := pressure.ComputeCollector{ActivationWorkingSetTarget: 100}
			if i == targets {
				// The same queries read with another activation target:
				// their demand differs, so they share nothing.
				compute.ActivationWorkingSetTarget = 50
			}
			all = append(all, &target{src: newSource(api, Options{ServerAddress: "http://prom:9090", Queries: Queries{Activation: "act"}, Pool: pool, Align: interval}), compute: compute})
		}
		time.Sleep(time.Until(time.Now().Truncate(interval).Add(interval)))
		start := time.Now()
		for k := range int(70 * time.Minute / interval) {
			at := start.Add(time.Duration(k) * interval)
			time.Sleep(time.Until(at))
			for _, tg := range all {
				s, err := tg.src.ObserveSeason(context.Background(), at, tg.compute)
				if err != nil {
					t.Fatal(err)
				}
				if s.Long != nil {
					if len(s.Long) != int(pressure.SeasonLong/pressure.SeasonStep) {
						t.Fatalf("a long history of %d points, want %d", len(s.Long), pressure.SeasonLong/pressure.SeasonStep)
					}
					tg.longs = append(tg.longs, at)
				}
				if d := s.Recent; len(d) > 0 && d[0].Demand != 0.5*100/tg.compute.ActivationWorkingSetTarget {
					t.Errorf("demand %v at working-set target %v", d[0].Demand, tg.compute.ActivationWorkingSetTarget)
				}
			}
		}
		for _, tg := range all {
			if len(tg.longs) == 0 || !tg.longs[0].Equal(all[0].longs[0]) {
				t.Fatalf("long histories read whole at %v and %v; want every target's within the first hour, at the same sample", all[0].longs, tg.longs)
			}
		}
		sent := len(api.range_)
		if sent%2 != 0 || sent < 2*(8+3) {
			t.Fatalf("%d range queries sent, want each window twice (one per activation target), the long history's 8 days included", sent)
		}
		shared := metric(t, reg, "barometer_prometheus_queries_shared_total").GetCounter().GetValue()
		if shared != float64((targets-1)*sent/2) {
			t.Errorf("shared = %v, want %d: every window sent once for the %d targets asking the same", shared, (targets-1)*sent/2, targets)
		}
		t.Logf("%d targets, two activation targets, 70 minutes from a cold start: %d range queries sent, %.0f shared", targets+1, sent, shared)
		for _, r := range api.range_ {
			if r.Step != pressure.SeasonStep || r.Start.Truncate(pressure.SeasonStep) != r.Start || r.End.Sub(r.Start) > 24*time.Hour {
				t.Errorf("range %v..%v step %v: want the 5-minute grid, at most a day", r.Start, r.End, r.Step)
			}
		}
	})
}

// BenchmarkFoldDemand folds one day of a range answer (288 steps) of ten
// replicas read by the default queries' five compute dimensions into
// demand: one of the eight the long history reads once an hour, or the
// recent windows' 56 steps five times over.
func BenchmarkFoldDemand(b *testing.B) {
	src := newSource(nil, Options{ServerAddress: "http://prom:9090", Queries: DefaultQueries(exposition.DefaultNames(), "", 0)})
	start := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	r := v1.Range{Start: start, End: start.Add(24*time.Hour - pressure.SeasonStep), Step: pressure.SeasonStep}
	var m model.Matrix
	for _, d := range []dimension{dimActivation, dimCPU, dimMemory, dimMemoryLimit, dimWalState} {
		for pod := range 10 {
			ss := &model.SampleStream{Metric: model.Metric{"pod": model.LabelValue(fmt.Sprint("pod-", pod)), dimLabel: model.LabelValue(fmt.Sprint(int(d)))}}
			for t := r.Start; !t.After(r.End); t = t.Add(r.Step) {
				ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: 0.5})
			}
			m = append(m, ss)
		}
	}
	compute := pressure.ComputeCollector{ActivationWorkingSetTarget: 100}
	b.ReportAllocs()
	for b.Loop() {
		pts, err := src.foldDemand(m, r, compute)
		if err != nil || len(pts) != 288 {
			b.Fatal(err, len(pts))
		}
	}
}
