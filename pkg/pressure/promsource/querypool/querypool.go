// Package querypool is what the prometheus sources of one process share
// per server: a bound on the queries in flight, one answer for identical
// queries of the same instant, and the rule that a query is sent only
// with the time left to answer it (see Pool).
package querypool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promclient"
)

// DefaultMaxInFlight is how many queries a Pool sends one server at once
// by default: well under Prometheus' own --query.max-concurrency (20),
// past which the server queues queries itself and answers 503 to those
// whose timeout runs out in its queue, and leaving room for a second
// scaler replica and for KEDA.
const DefaultMaxInFlight = 8

// Kind is what a query is for. It decides the share of the server's
// slots the query may take, and the latencies its time left is weighed
// against (a day of history takes longer than an instant).
type Kind int

const (
	// Sample is a sample's own query: the signal waits on it.
	Sample Kind = iota
	// Backfill is a starting sampler's past, read as one range query.
	Backfill
	// History is a read of the seasonal forecast's history. Nothing
	// waits on it, so it takes at most half of a server's slots, and a
	// sample's query never queues behind more than that.
	History
	numKinds
)

// Query is one query asked through a Pool.
type Query struct {
	// Server is the address whose bound and latencies apply.
	Server string
	// Key must say everything the answer depends on (the server, the
	// query, its instant or range, the credentials and parameters it is
	// sent with): callers asking the same Key share one answer.
	Key  string
	Kind Kind
}

// ErrNoTime is wrapped by the error of a query the Pool did not send: it
// had less time left than the server's recent queries of its kind took,
// so it would have been abandoned before its answer, after costing the
// server the work.
var ErrNoTime = errors.New("not sent")

// Pool is what the prometheus sources of one process share, per server:
//
//   - a bound on the queries in flight to it, past which a query waits its
//     turn (within its sample's budget) rather than being sent; history
//     reads take at most half of it;
//   - one answer for identical queries: a query asked while the same one
//     is in flight joins it, and one asked after it was answered, while
//     the asker that sent it could still be waiting (its deadline), is
//     handed the kept answer. Samplers of one interval evaluate at the same
//     aligned instants, so targets asking the same thing send each query
//     once per instant, however their samples fall;
//   - the rule that a query is sent only with at least as much time left
//     as the server's recent answers to its kind took (see latencies and
//     server.expected): one with less would be abandoned before its
//     answer, so it fails at once
//     with ErrNoTime instead. The time left is what a server's timeout
//     parameter can say (whole seconds above one), and the query is given
//     exactly that, so the server and the scaler stop at the same moment.
//
// A source given no Pool has one of its own.
//
// A Pool is a prometheus.Collector of what it does: register it where the
// process serves its metrics.
type Pool struct {
	maxInFlight int64

	mu      sync.Mutex
	servers map[string]*server

	wait    *prometheus.HistogramVec
	sent    *prometheus.CounterVec
	shared  *prometheus.CounterVec
	refused *prometheus.CounterVec
}

// server is one server's bound, its queries in flight, the answers kept
// for the askers still to come, and its recent latencies.
type server struct {
	slots   *semaphore.Weighted
	history *semaphore.Weighted // History's share of slots
	flights singleflight.Group
	kept    keptAnswers
	took    [numKinds]latencies
}

// New returns a Pool sending each server at most maxInFlight queries at
// once; 0 or less means DefaultMaxInFlight.
func New(maxInFlight int) *Pool {
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	return &Pool{
		maxInFlight: int64(maxInFlight),
		servers:     map[string]*server{},
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "barometer_prometheus_query_wait_seconds",
			Help:    "Time a PromQL query waited for its turn before being sent, the server having as many queries in flight as the scaler sends it at once.",
			Buckets: []float64{.001, .005, .025, .1, .25, .5, 1, 2.5, 5},
		}, []string{"server"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_prometheus_queries_total",
			Help: "PromQL queries sent to a server, each sample's dimensions combined into as few as their answers allow.",
		}, []string{"server"}),
		shared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_prometheus_queries_shared_total",
			Help: "PromQL queries not sent because another source asked the server the same query for the same instant: its answer served both.",
		}, []string{"server"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_prometheus_queries_not_sent_total",
			Help: "PromQL queries not sent because less time was left than the server's recent queries took: they would have been abandoned before the answer.",
		}, []string{"server"}),
	}
}

// Describe and Collect make the Pool a prometheus.Collector.
func (p *Pool) Describe(ch chan<- *prometheus.Desc) {
	p.wait.Describe(ch)
	p.sent.Describe(ch)
	p.shared.Describe(ch)
	p.refused.Describe(ch)
}

// Collect reports barometer_prometheus_query_wait_seconds,
// barometer_prometheus_queries_total,
// barometer_prometheus_queries_shared_total and
// barometer_prometheus_queries_not_sent_total.
func (p *Pool) Collect(ch chan<- prometheus.Metric) {
	p.wait.Collect(ch)
	p.sent.Collect(ch)
	p.shared.Collect(ch)
	p.refused.Collect(ch)
}

func (p *Pool) server(address string) *server {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.servers[address]
	if !ok {
		s = &server{slots: semaphore.NewWeighted(p.maxInFlight), history: semaphore.NewWeighted(max(1, p.maxInFlight/2))}
		p.servers[address] = s
	}
	return s
}

// Do runs ask once for every caller that passes the same q.Key while it
// runs or while its answer is kept, within the bound of q.Server, and
// hands each caller its answer. ask is given the time the server has to
// answer (its ctx ends then too), to send as the query's timeout.
// The run outlives a caller that gives up (it is bounded by the deadline
// of the caller that started it), so a caller going away does not fail
// the others. The answer is shared: callers must not modify it.
func (p *Pool) Do(ctx context.Context, q Query, ask func(ctx context.Context, timeout time.Duration) (any, error)) (any, error) {
	srv := p.server(q.Server)
	if v, ok := srv.kept.get(q.Key, time.Now()); ok {
		p.shared.WithLabelValues(q.Server).Inc()
		return v, nil
	}
	ran := false
	ch := srv.flights.DoChan(q.Key, func() (any, error) {
		ran = true
		return p.run(ctx, srv, q, ask)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		// ran is read after the channel receive, which the run's write
		// happens before.
		if !ran {
			p.shared.WithLabelValues(q.Server).Inc()
		}
		return r.Val, r.Err
	}
}

// run waits for a slot while the time left covers what the server's
// recent queries of q's kind took, sends the query with the time left,
// and keeps its answer for the askers still to come.
func (p *Pool) run(ctx context.Context, srv *server, q Query, ask func(context.Context, time.Duration) (any, error)) (any, error) {
	deadline, bounded := ctx.Deadline()
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	need := srv.expected(q.Kind, start)
	// The turn is awaited no longer than the query could still be
	// answered in time.
	waitCtx := ctx
	if bounded {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithDeadline(ctx, deadline.Add(-need))
		defer cancel()
	}
	if q.Kind == History {
		if err := srv.history.Acquire(waitCtx, 1); err != nil {
			return nil, p.notSent(q, deadline, need)
		}
		defer srv.history.Release(1)
	}
	if err := srv.slots.Acquire(waitCtx, 1); err != nil {
		return nil, p.notSent(q, deadline, need)
	}
	defer srv.slots.Release(1)
	sentAt := time.Now()
	p.wait.WithLabelValues(q.Server).Observe(sentAt.Sub(start).Seconds())
	var timeout time.Duration
	if bounded {
		// Measured again: answers that came while it waited (a scaler's
		// first, say) count.
		need = srv.expected(q.Kind, sentAt)
		if timeout = promclient.ServerTimeout(deadline.Sub(sentAt)); timeout <= 0 || timeout < need {
			return nil, p.notSent(q, deadline, need)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, sentAt.Add(timeout))
		defer cancel()
	}
	p.sent.WithLabelValues(q.Server).Inc()
	v, err := ask(ctx, timeout)
	// Only what came back in time is a latency; a query cut off at its
	// deadline says only that it took longer, and counting that would
	// keep every query from a server that was down once.
	if ctx.Err() == nil {
		srv.took[q.Kind].add(time.Now(), time.Since(sentAt))
	}
	if err == nil && bounded {
		srv.kept.put(q.Key, v, deadline)
	}
	return v, err
}

// notSent is the error of a query whose turn did not come while there
// was time to answer it: its wait ends only at that deadline (the caller's
// cancellation is not its wait's).
func (p *Pool) notSent(q Query, deadline time.Time, need time.Duration) error {
	p.refused.WithLabelValues(q.Server).Inc()
	return fmt.Errorf("%w: %v left before the deadline, and the server's recent answers took %v (queries in flight to it: at most %d)",
		ErrNoTime, max(0, time.Until(deadline)).Round(time.Millisecond), need.Round(time.Millisecond), p.maxInFlight)
}

// expected is how long a query of kind is expected to take: what the
// server's recent answers to that kind took, or while none has been
// measured (a scaler's first samples queue behind its first backfills),
// what the quickest kind measured took: a query of one kind takes no less
// than the quickest of the others, near enough.
func (s *server) expected(kind Kind, now time.Time) time.Duration {
	if d := s.took[kind].expected(now); d > 0 {
		return d
	}
	var quickest time.Duration
	for k := range s.took {
		if d := s.took[k].expected(now); d > 0 && (quickest == 0 || d < quickest) {
			quickest = d
		}
	}
	return quickest
}

// latencyWindow is how many recent latencies a server keeps per kind,
// and latencyMaxAge how long one counts: a server that was slow a
// minute ago and has answered nothing since is given every query again.
// What a query is expected to take is the 90th percentile of those: one
// answer slowed by a pause of the machine's does not keep the others
// from being sent, a server that has become slower moves it within a
// few answers.
const (
	latencyWindow = 32
	latencyMaxAge = time.Minute
)

// latencies are a server's recent times to answer one kind of query.
type latencies struct {
	mu   sync.Mutex
	took [latencyWindow]time.Duration
	at   [latencyWindow]time.Time
	next int
}

func (l *latencies) add(now time.Time, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.took[l.next], l.at[l.next] = d, now
	l.next = (l.next + 1) % latencyWindow
}

// expected is the 90th percentile of the latencies measured within
// latencyMaxAge of now; 0 when there is none.
func (l *latencies) expected(now time.Time) time.Duration {
	var recent [latencyWindow]time.Duration
	n := 0
	l.mu.Lock()
	for i, d := range l.took {
		if !l.at[i].IsZero() && now.Sub(l.at[i]) <= latencyMaxAge {
			recent[n] = d
			n++
		}
	}
	l.mu.Unlock()
	if n == 0 {
		return 0
	}
	slices.Sort(recent[:n])
	return recent[(n*9+9)/10-1]
}

// maxKept bounds the answers a server keeps for askers to come: with
// many distinct targets few are ever asked again, and the bound keeps
// them from filling the heap between their deadlines.
const maxKept = 1024

// keptAnswers are the answers kept until the deadline of the asker that
// sent them: later askers of the same query for the same instant
// (samplers whose samples began a little later) take them instead of
// sending it again.
type keptAnswers struct {
	mu      sync.Mutex
	answers map[string]kept
	swept   time.Time
}

type kept struct {
	v     any
	until time.Time
}

func (k *keptAnswers) get(key string, now time.Time) (any, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	a, ok := k.answers[key]
	if !ok || now.After(a.until) {
		return nil, false
	}
	return a.v, true
}

func (k *keptAnswers) put(key string, v any, until time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// Expired answers go at most once a second, or when the bound is
	// reached: one pass over a thousand is nothing at that pace.
	if now := time.Now(); len(k.answers) >= maxKept || now.Sub(k.swept) >= time.Second {
		k.swept = now
		for key, a := range k.answers {
			if now.After(a.until) {
				delete(k.answers, key)
			}
		}
		if len(k.answers) >= maxKept {
			return
		}
	}
	if k.answers == nil {
		k.answers = map[string]kept{}
	}
	k.answers[key] = kept{v: v, until: until}
}
