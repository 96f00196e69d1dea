// Package querypool is what the prometheus sources of one process share
// per server: a bound on the queries in flight and one answer for
// identical queries asked at the same instant (see Pool).
package querypool

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
)

// DefaultMaxInFlight is how many queries a Pool sends one server at once
// by default: well under Prometheus' own --query.max-concurrency (20),
// past which the server queues queries itself and answers 503 to those
// whose timeout runs out in its queue, and leaving room for a second
// scaler replica and for KEDA.
const DefaultMaxInFlight = 8

// Pool is what the prometheus sources of one process share, per server:
// a bound on the queries in flight to it, past which a query waits its
// turn (within its sample's budget) rather than being sent, and one
// answer for identical queries asked at the same instant, however many
// sources ask them (samplers of one interval evaluate at the same aligned
// instants, so targets that ask the same thing share every answer). A
// source given no Pool has one of its own.
//
// A Pool is a prometheus.Collector of what it does: register it where the
// process serves its metrics.
type Pool struct {
	maxInFlight int64

	mu      sync.Mutex
	servers map[string]*server

	wait   *prometheus.HistogramVec
	sent   *prometheus.CounterVec
	shared *prometheus.CounterVec
}

// server is one server's bound and its queries in flight.
type server struct {
	slots   *semaphore.Weighted
	flights singleflight.Group
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
			Help: "PromQL queries not sent because another source was asking the same server the same query at the same instant: its answer served both.",
		}, []string{"server"}),
	}
}

// Describe and Collect make the Pool a prometheus.Collector.
func (p *Pool) Describe(ch chan<- *prometheus.Desc) {
	p.wait.Describe(ch)
	p.sent.Describe(ch)
	p.shared.Describe(ch)
}

// Collect reports barometer_prometheus_query_wait_seconds,
// barometer_prometheus_queries_total and
// barometer_prometheus_queries_shared_total.
func (p *Pool) Collect(ch chan<- prometheus.Metric) {
	p.wait.Collect(ch)
	p.sent.Collect(ch)
	p.shared.Collect(ch)
}

func (p *Pool) server(address string) *server {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.servers[address]
	if !ok {
		s = &server{slots: semaphore.NewWeighted(p.maxInFlight)}
		p.servers[address] = s
	}
	return s
}

// Do runs ask once for every caller that passes the same key while it
// runs, within the bound of address, and hands each caller its answer.
// key must say everything the answer depends on (the server, the query,
// its instant, the credentials and parameters it is sent with).
// The run outlives a caller that gives up (it is bounded by the deadline
// of the caller that started it), so a caller going away does not fail
// the others. The answer is shared: callers must not modify it.
func (p *Pool) Do(ctx context.Context, address, key string, ask func(context.Context) (any, error)) (any, error) {
	srv := p.server(address)
	ran := false
	ch := srv.flights.DoChan(key, func() (any, error) {
		ran = true
		runCtx := context.WithoutCancel(ctx)
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			runCtx, cancel = context.WithDeadline(runCtx, dl)
			defer cancel()
		}
		start := time.Now()
		if err := srv.slots.Acquire(runCtx, 1); err != nil {
			return nil, err
		}
		defer srv.slots.Release(1)
		p.wait.WithLabelValues(address).Observe(time.Since(start).Seconds())
		p.sent.WithLabelValues(address).Inc()
		return ask(runCtx)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		// ran is read after the channel receive, which the run's write
		// happens before.
		if !ran {
			p.shared.WithLabelValues(address).Inc()
		}
		return r.Val, r.Err
	}
}
