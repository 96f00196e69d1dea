package promsource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promclient"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
)

// The past is read with range queries: a starting sampler's backfill
// (ObservePast) and the seasonal forecast's history (season.go). Either
// asks the sample's combined query (see dimLabel) over a range of
// instants in one query, and reads the answer step by step as a sample
// reads an instant's answer: each step's series sorted into their
// dimensions (steps) and folded (fold, or foldReplicas for the demand).

var _ pressure.HistorySource = (*Source)(nil)

// rangeQuerier is the call the past needs beyond an instant query;
// v1.API has it.
type rangeQuerier interface {
	QueryRange(ctx context.Context, query string, r v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
}

// ObservePast is what Observe would have answered at each of the n
// instants every step from first (pressure.HistorySource), read in one
// range query of every configured dimension: the instants are evaluated
// where Observe would have evaluated them, so a sampler starting late
// folds the same past its peer read live. An instant that cannot be
// folded has its error; a query that fails fails them all (the
// backfill is then skipped: a query failing in combination, such as a
// broken splits query, is not asked again part by part for the past).
func (s *Source) ObservePast(ctx context.Context, first time.Time, step time.Duration, n int) ([]pressure.PastObservation, error) {
	if n <= 0 {
		return nil, nil
	}
	start := s.evaluatedAt(first)
	r := v1.Range{Start: start, End: start.Add(time.Duration(n-1) * step), Step: step}
	var dims []dimension
	for d, q := range s.queries {
		if q != "" {
			dims = append(dims, dimension(d))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := s.sendRange(ctx, querypool.Backfill, s.combinedQuery(dims), r, "", func(v model.Value) (any, error) { return splitRange(v) })
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: the past from %s to %s: %w%s", s.server, r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339), err, s.authHint(err))
	}
	out := make([]pressure.PastObservation, 0, n)
	v.(*rangeAnswer).steps(r, func(k int, at time.Time, res *[numDimensions]result) {
		for _, d := range dims {
			res[d] = s.check(d, res[d].vec)
		}
		obs, err := s.observed(res, at)
		out = append(out, pressure.PastObservation{At: first.Add(time.Duration(k) * step), Observation: obs, Err: err})
	})
	return out, nil
}

// sendRange asks query over r through the pool as a query of kind,
// shared with the sources asking the same over the same range (and, for
// a derived answer, the same derivation: read's).
func (s *Source) sendRange(ctx context.Context, kind querypool.Kind, query string, r v1.Range, derived string, read func(model.Value) (any, error)) (any, error) {
	rq, ok := s.api.(rangeQuerier)
	if !ok {
		return nil, errors.New("promsource: this client cannot ask range queries")
	}
	key := s.flightKey + "\x00" + derived + "\x00range " + strconv.FormatInt(r.Start.UnixNano(), 10) + " " + strconv.FormatInt(r.End.UnixNano(), 10) + " " + r.Step.String() + "\x00" + query
	return s.pool.Do(ctx, querypool.Query{Server: s.server, Key: key, Kind: kind}, func(ctx context.Context, timeout time.Duration) (any, error) {
		v, warnings, _, err := rq.QueryRange(ctx, query, r, promclient.TimeoutOption(timeout)...)
		if err != nil {
			return nil, err
		}
		if len(warnings) > 0 {
			s.logger.Debug("prometheus range query warnings", "warnings", warnings)
		}
		return read(v)
	})
}

// rangeAnswer is a combined range answer, each series' dimension read
// off its dimLabel. The label stays on the series (the answer may be
// shared, and nothing reads it).
type rangeAnswer struct {
	m    model.Matrix
	dims []dimension
}

// splitRange reads a combined range answer's dimensions. It runs once per
// answer, before the answer is shared.
func splitRange(v model.Value) (*rangeAnswer, error) {
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("returned a %s; want a range vector", typeName(v))
	}
	a := &rangeAnswer{m: m, dims: make([]dimension, len(m))}
	for i, ss := range m {
		d, err := strconv.Atoi(string(ss.Metric[dimLabel]))
		if err != nil || d < 0 || d >= int(numDimensions) {
			return nil, fmt.Errorf("series %s has no dimension label %s the query gave it", ss.Metric, dimLabel)
		}
		a.dims[i] = dimension(d)
	}
	return a, nil
}

// steps calls fold for each step k of r with the answers at that
// step by dimension, as an instant query evaluated there would have
// answered them. res and its vectors are reused from step to step: fold
// must not keep them.
func (a *rangeAnswer) steps(r v1.Range, fold func(k int, at time.Time, res *[numDimensions]result)) {
	n := int(r.End.Sub(r.Start)/r.Step) + 1
	// next[i] is series i's next sample: the samples of a series are in
	// time order, so one pass over the steps reads each once.
	next := make([]int, len(a.m))
	// samples[i] is series i's sample at the step being read.
	samples := make([]model.Sample, len(a.m))
	var res [numDimensions]result
	for k := range n {
		at := r.Start.Add(time.Duration(k) * r.Step)
		ts := model.TimeFromUnixNano(at.UnixNano())
		for d := range res {
			res[d] = result{vec: res[d].vec[:0]}
		}
		for i, ss := range a.m {
			vals := ss.Values
			for next[i] < len(vals) && vals[next[i]].Timestamp < ts {
				next[i]++
			}
			if next[i] < len(vals) && vals[next[i]].Timestamp == ts {
				samples[i] = model.Sample{Metric: ss.Metric, Value: vals[next[i]].Value, Timestamp: ts}
				res[a.dims[i]].vec = append(res[a.dims[i]].vec, &samples[i])
			}
		}
		fold(k, at, &res)
	}
}

// foldDemand folds a combined range answer of the compute dimensions
// step by step into raw demand: the replicas of each step
// (foldReplicas), read by compute. A step with no replica to read, or
// whose series cannot be folded, has no point. It runs once per answer,
// before the answer is shared; the points it returns are never modified.
func (s *Source) foldDemand(v model.Value, r v1.Range, compute pressure.ComputeCollector) ([]pressure.DemandPoint, error) {
	a, err := splitRange(v)
	if err != nil {
		return nil, err
	}
	out := make([]pressure.DemandPoint, 0, int(r.End.Sub(r.Start)/r.Step)+1)
	replicas := make([]pressure.ReplicaObservation, 0, 8)
	a.steps(r, func(_ int, at time.Time, res *[numDimensions]result) {
		folded, err := s.foldReplicas(res)
		if err != nil {
			return
		}
		replicas = replicas[:0]
		for _, rep := range folded {
			rep.finish()
			if !rep.down && rep.err == nil {
				replicas = append(replicas, rep.obs)
			}
		}
		if len(replicas) > 0 {
			out = append(out, pressure.DemandPoint{At: at, Demand: compute.Collect(pressure.Observation{Replicas: replicas}).Demand()})
		}
	})
	return out, nil
}
