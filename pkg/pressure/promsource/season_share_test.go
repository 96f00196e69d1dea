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

// gatedRangeAPI answers every range query with one replica at 50 of
// working set at every step, once open is closed and after a millisecond
// of evaluation, and records the ranges it was asked. It is a fake because
// sharing is a matter of timing: the targets must be asking at the same
// moment, which a real server on loopback cannot be made to arrange (the
// real server's answers are TestSeasonalForecastFromPrometheus's).
type gatedRangeAPI struct {
	fakeAPI
	open   chan struct{}
	mu     sync.Mutex
	range_ []v1.Range
}

func (g *gatedRangeAPI) QueryRange(ctx context.Context, q string, r v1.Range, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	g.mu.Lock()
	g.range_ = append(g.range_, r)
	g.mu.Unlock()
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, nil, nil, ctx.Err()
	}
	time.Sleep(time.Millisecond) // the fake clock's: the evaluation takes a while
	var values []model.SamplePair
	for t := r.Start; !t.After(r.End); t = t.Add(r.Step) {
		values = append(values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: 50})
	}
	return model.Matrix{{Metric: model.Metric{"pod": "a", dimLabel: model.LabelValue(fmt.Sprint(int(dimActivation)))}, Values: values}}, nil, nil, nil
}

func TestTargetsAskingTheSameShareTheHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &gatedRangeAPI{open: make(chan struct{})}
		pool := querypool.New(0)
		reg := prometheus.NewRegistry()
		reg.MustRegister(pool)
		compute := pressure.ComputeCollector{ActivationWorkingSetTarget: 100}
		at := time.Date(2026, 3, 4, 11, 50, 0, 0, time.UTC)
		const targets = 20
		seasons := make(chan pressure.Season, targets+1)
		errs := make(chan error, targets+1)
		ask := func(q Queries, compute pressure.ComputeCollector) {
			src := newSource(api, Options{ServerAddress: "http://prom:9090", Queries: q, Pool: pool})
			go func() {
				s, err := src.ObserveSeason(context.Background(), at, compute)
				seasons <- s
				errs <- err
			}()
		}
		for range targets {
			ask(Queries{Activation: "act"}, compute)
		}
		// The same queries read with another activation target: their
		// demand differs, so they share nothing.
		ask(Queries{Activation: "act"}, pressure.ComputeCollector{ActivationWorkingSetTarget: 50})
		synctest.Wait()
		close(api.open)
		for range targets + 1 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			s := <-seasons
			if len(s.Recent) != 6+2*25 || len(s.Long) != int(pressure.SeasonLong/pressure.SeasonStep) {
				t.Errorf("%d recent and %d long points, want %d and %d", len(s.Recent), len(s.Long), 6+2*25, pressure.SeasonLong/pressure.SeasonStep)
			}
			if d := s.Recent[0].Demand; d != 0.5 && d != 1 {
				t.Errorf("demand %v, want 0.5 (or 1 at the other target)", d)
			}
		}
		// Each of the two readings asks its three recent windows once
		// and, the first time in the hour, the eight days of the long
		// history a day at a time.
		const perReading = 3 + 8
		if len(api.range_) != 2*perReading {
			t.Errorf("%d targets asking the same history sent %d range queries, want %d", targets+1, len(api.range_), 2*perReading)
		}
		if n := metric(t, reg, "barometer_prometheus_queries_shared_total").GetCounter().GetValue(); n != (targets-1)*perReading {
			t.Errorf("shared = %v, want %d", n, (targets-1)*perReading)
		}
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
