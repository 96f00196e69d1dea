package promsource

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promclient"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
)

// This file is the path of one sample's queries, in the order a sample
// takes it: queryAll, queryTogether (combinedQuery, send, split, check)
// and, for the parts asked alone or a combination that failed, query and
// separable.

// A sample asks its dimensions in one query: each dimension's query is
// wrapped in label_replace, which adds dimLabel naming the dimension and
// changes nothing else (not the values, not the other labels, not the
// order of the series), and the wrapped queries are joined by `or`,
// which keeps every series of both sides whose label sets differ, as
// those of two dimensions always do by dimLabel. The answer is split back
// by dimLabel (and an instant answer's label removed), so each dimension
// reads exactly the series its own query returns. Every query is evaluated at the same
// instant either way.
//
// What one query cannot tell apart is whose fault a failure is: the
// server refuses the whole combined query when one part does not parse,
// is not an instant vector, or fails to evaluate. Such a failure is asked
// again part by part, which fails exactly the parts that fail alone (so
// each dimension's error is the one it always had, and the splits query
// still fails open), and those parts are asked alone from then on. A
// failure that says nothing about the query (the sample's time is up,
// the server could not be reached, refused the credentials or was too
// busy) fails the sample as it is: asking again part by part would only
// add load where the server is already short of it.
const dimLabel = "__barometer_dim"

// maxRefusals is how many samples in a row may find the combined query
// refused while each of its parts answers alone before the parts are
// asked alone from then on.
const maxRefusals = 3

// result is one query's answer.
type result struct {
	vec model.Vector
	err error
}

// answers is a combined query's answer, split by dimension.
type answers [numDimensions]model.Vector

// queryAll asks every configured query at the instant at: the dimensions
// that may be combined in one query, the others alone, concurrently.
func (s *Source) queryAll(ctx context.Context, at time.Time) *[numDimensions]result {
	var (
		res             [numDimensions]result
		together, alone []dimension
	)
	solo := s.solo.Load()
	for d, q := range s.queries {
		switch {
		case q == "":
		case solo&(1<<d) != 0:
			alone = append(alone, dimension(d))
		default:
			together = append(together, dimension(d))
		}
	}
	if len(together) == 1 {
		alone, together = append(alone, together[0]), nil
	}
	var wg sync.WaitGroup
	for _, d := range alone {
		wg.Go(func() { res[d] = s.query(ctx, d, at) })
	}
	if len(together) > 0 {
		s.queryTogether(ctx, together, at, &res)
	}
	wg.Wait()
	return &res
}

// queryTogether asks dims in one query and puts each one's answer in res.
func (s *Source) queryTogether(ctx context.Context, dims []dimension, at time.Time, res *[numDimensions]result) {
	q := s.combinedQuery(dims)
	v, err := s.send(ctx, "combined", q, at, func(v model.Value) (any, error) { return split(v) })
	if err == nil {
		s.refusals.Store(0)
		byDim := v.(*answers)
		for _, d := range dims {
			res[d] = s.check(d, byDim[d])
		}
		return
	}
	if !separable(ctx, err) {
		keys := make([]string, len(dims))
		for i, d := range dims {
			keys[i] = d.Key()
		}
		err = fmt.Errorf("prometheus %s: %d queries asked as one (%s): %w%s", s.server, len(dims), strings.Join(keys, ", "), err, s.authHint(err))
		for _, d := range dims {
			res[d] = result{err: err}
		}
		return
	}
	var wg sync.WaitGroup
	for _, d := range dims {
		wg.Go(func() { res[d] = s.query(ctx, d, at) })
	}
	wg.Wait()
	var failed uint32
	var keys []string
	for _, d := range dims {
		if e := res[d].err; e != nil && separable(ctx, e) {
			failed |= 1 << d
			keys = append(keys, d.Key())
		}
	}
	if failed == 0 {
		// Every part answers alone: either the failure passed (a
		// connection cut mid-answer) or the server refuses only their
		// combination (its answer too large, say), which only repeated
		// failures tell apart.
		if s.refusals.Add(1) < maxRefusals {
			s.logger.Debug("prometheus refused the combined query but answered every part alone", "server", s.server, "err", err)
			return
		}
		for _, d := range dims {
			failed |= 1 << d
		}
		keys = []string{"all"}
	}
	s.solo.Or(failed)
	s.logger.Info("prometheus queries that fail combined are asked alone from now on", "server", s.server, "queries", keys, "err", err)
}

// combinedQuery is the query asking every dimension of dims at once. A
// line break ends each query, so a trailing PromQL comment (# ...) in one
// cannot swallow what follows it.
func (s *Source) combinedQuery(dims []dimension) string {
	var b strings.Builder
	for i, d := range dims {
		if i > 0 {
			b.WriteString(" or ")
		}
		fmt.Fprintf(&b, "label_replace(%s\n, %q, %q, \"\", \"\")", s.queries[d], dimLabel, strconv.Itoa(int(d)))
	}
	return b.String()
}

// send asks the server query, evaluated at at, through the pool: in turn
// with the other queries to the server, only with the time left to
// answer it (the server is told that time, and stops evaluating when
// nobody waits any more), and once for every source asking the same at
// the same instant. read turns the answer into what is shared (it runs
// once, before sharing). name labels the query in logs.
func (s *Source) send(ctx context.Context, name, query string, at time.Time, read func(model.Value) (any, error)) (any, error) {
	q := querypool.Query{Server: s.server, Key: s.flightKey + "\x00" + strconv.FormatInt(at.UnixNano(), 10) + "\x00" + query, Kind: querypool.Sample}
	return s.pool.Do(ctx, q, func(ctx context.Context, timeout time.Duration) (any, error) {
		v, warnings, _, err := s.api.Query(ctx, query, at, promclient.TimeoutOption(timeout)...)
		if err != nil {
			return nil, err
		}
		if len(warnings) > 0 {
			s.logger.Debug("prometheus query warnings", "query", name, "warnings", warnings)
		}
		return read(v)
	})
}

// split sorts a combined answer into its dimensions, taking dimLabel off
// every series. It runs once per answer, before the answer is shared.
func split(v model.Value) (*answers, error) {
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("returned a %s; want an instant vector", typeName(v))
	}
	var out answers
	for _, smp := range vec {
		d, err := strconv.Atoi(string(smp.Metric[dimLabel]))
		if err != nil || d < 0 || d >= int(numDimensions) {
			return nil, fmt.Errorf("series %s has no dimension label %s the query gave it", smp.Metric, dimLabel)
		}
		delete(smp.Metric, dimLabel)
		out[d] = append(out[d], smp)
	}
	return &out, nil
}

// check is what a dimension's answer must be beyond an instant vector.
func (s *Source) check(d dimension, vec model.Vector) result {
	if len(vec) == 0 && s.failOnEmpty && d.required() {
		return result{err: s.errorf(d, "%w", ErrEmpty)}
	}
	return result{vec: vec}
}

// query asks one dimension's query alone.
func (s *Source) query(ctx context.Context, d dimension, at time.Time) result {
	v, err := s.send(ctx, d.Key(), s.queries[d], at, func(v model.Value) (any, error) { return v, nil })
	if err != nil {
		return result{err: s.errorf(d, "%w%s", err, s.authHint(err))}
	}
	vec, ok := v.(model.Vector)
	if !ok {
		val, _ := v.(model.Value)
		return result{err: s.errorf(d, "returned a %s; want an instant vector with one series per %s", typeName(val), s.seriesUnit(d))}
	}
	return s.check(d, vec)
}

// separable reports whether a combined query's failure may be one of its
// parts' own, which asking them one by one tells: not when the sample's
// time is up (or too short for the server to answer: querypool.ErrNoTime),
// the server could not be reached (a transport error, which
// client_golang returns as a *url.Error), or answered something that is
// not about the query (a time-out in its queue, a status from the server
// or a proxy in front of it without an API error, such as 401, 429 or
// 503).
func separable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, querypool.ErrNoTime) {
		return false
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		return false
	}
	if apiErr, ok := errors.AsType[*v1.Error](err); ok {
		switch apiErr.Type {
		case v1.ErrTimeout, v1.ErrCanceled, "unavailable":
			return false
		case v1.ErrClient, v1.ErrServer:
			return !strings.HasPrefix(apiErr.Msg, "client error: ") && !strings.HasPrefix(apiErr.Msg, "server error: ")
		}
	}
	return true
}

// authHint says what a 401 or 403 means, since client_golang reports only
// the code (the body, which a proxy may fill with anything, is not
// shown).
func (s *Source) authHint(err error) string {
	var apiErr *v1.Error
	if !errors.As(err, &apiErr) || apiErr.Type != v1.ErrClient {
		return ""
	}
	via := "without credentials (no connection profile)"
	if s.profile != "" {
		via = "with the credentials of connection profile " + s.profile
	}
	switch {
	case strings.HasSuffix(apiErr.Msg, ": 401"):
		return ": the server did not accept the request " + via
	case strings.HasSuffix(apiErr.Msg, ": 403"):
		return ": the server refused the request " + via + " (a credential or tenant it does not allow)"
	}
	return ""
}

func (s *Source) errorf(d dimension, format string, args ...any) error {
	return fmt.Errorf("prometheus %s: %s %q: %w", s.server, d.Key(), s.queries[d], fmt.Errorf(format, args...))
}

func (s *Source) seriesUnit(d dimension) string {
	switch {
	case d.storage():
		return "tree"
	case d == dimReady || d == dimRetrying:
		return "class"
	case d >= dimReservationStart:
		return "reservation id"
	case d.queue() && !d.counter():
		return "workload (series are summed)"
	}
	return "replica"
}

func typeName(v model.Value) string {
	if v == nil {
		return "nothing"
	}
	return v.Type().String()
}
