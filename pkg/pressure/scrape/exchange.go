package scrape

import (
	"context"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/body"
)

// DefaultShareAge is how old a shared scrape may be and still serve a
// Source: long enough to cover the burst of samplers that wake at the same
// aligned instant, short beside any sample interval.
const DefaultShareAge = 250 * time.Millisecond

// ExchangeOptions configure an Exchange. The zero value is the process's.
type ExchangeOptions struct {
	// Now is the clock of the scrapes' start; nil means time.Now.
	Now func() time.Time
	// MaxAge is how old a finished scrape may be and still be handed to
	// another Source instead of scraping again; zero means
	// DefaultShareAge, negative shares only scrapes still in flight.
	MaxAge time.Duration
}

// Exchange shares scrapes between the Sources of a process: the targets
// that name the same replica sample at the same aligned instants, so they
// take one HTTP exchange, and one parse, between them rather than one
// each. Only Sources that would scrape the same way share: the same
// connection profile (so the same credentials), the same namespace, the
// same allow-list, the same metric names (so the same filter and
// reading) and the same response and series limits; each such group has
// one HTTP client, so its kept-alive connections are shared too.
//
// A Source joins a scrape of its replica still in flight, or takes one
// that finished at most MaxAge ago, when it started after the Source's
// previous scrape of that replica (so a CPU rate always spans a real
// interval); otherwise it scrapes anew. Each Source waits under its own
// timeout and sample deadline and fails as it would alone: one that
// joined a scrape leaves it when its time is up; the one running it ends
// it, and those still waiting scrape again themselves.
// The result is the replica's read values (body.Sample), never modified
// by a reader. Build one per process, where the scrape sources are built.
type Exchange struct {
	now    func() time.Time
	maxAge time.Duration

	mu     sync.Mutex
	groups map[shareKey]*group
}

// NewExchange returns an Exchange; it does no I/O.
func NewExchange(opts ExchangeOptions) *Exchange {
	e := &Exchange{now: opts.Now, maxAge: opts.MaxAge, groups: map[shareKey]*group{}}
	if e.now == nil {
		e.now = time.Now
	}
	if e.maxAge == 0 {
		e.maxAge = DefaultShareAge
	}
	return e
}

// shareKey is everything but the timeout that makes two Sources scrape a
// replica the same way.
type shareKey struct {
	profile   *connprofile.Profile
	allow     *allow.List
	namespace string
	limit     int64
	series    int
	names     exposition.Names
}

// group is the Sources of one shareKey: their client and their scrapes
// by endpoint (see endpoint).
type group struct {
	ex     *Exchange
	key    shareKey
	client *client
	buf    sync.Pool // *[]body.Series, one scrape's

	// guarded by ex.mu
	refs    int
	flights map[string]*flight
	swept   time.Time
}

// flight is one scrape of one replica, run by the Source that started it
// and waited for by those that joined it.
type flight struct {
	at   time.Time // when it started
	done chan struct{}

	// set before done is closed
	sample body.Sample
	err    error
	// cut says the scrape ended because the Source running it gave up (its
	// own timeout or sample deadline): no answer of the replica's, so
	// those waiting scrape again themselves.
	cut bool
}

// join returns the group of o, created on the first Source that needs it.
func (e *Exchange) join(o *Options) (*group, error) {
	k := shareKey{profile: o.Profile, allow: o.Allow, namespace: o.Namespace,
		limit: o.MaxResponseBytes, series: o.SeriesLimit, names: o.Names}
	e.mu.Lock()
	defer e.mu.Unlock()
	if g := e.groups[k]; g != nil {
		g.refs++
		return g, nil
	}
	fams, err := body.NewFamilies(&k.names)
	if err != nil {
		return nil, err
	}
	c := newClient(k.limit, fams, k.allow, k.profile)
	c.series = k.series
	g := &group{ex: e, key: k, client: c, refs: 1, flights: map[string]*flight{}}
	e.groups[k] = g
	return g, nil
}

// leave drops a Source's use of g; the last one out closes its kept-alive
// connections. g still scrapes afterwards, reconnecting, unshared.
func (g *group) leave() {
	e := g.ex
	e.mu.Lock()
	g.refs--
	last := g.refs == 0
	if last && e.groups[g.key] == g {
		delete(e.groups, g.key)
	}
	e.mu.Unlock()
	if last {
		g.client.close()
	}
}

// fetch returns j's replica read by a scrape started after after: one in
// flight or fresh (see Exchange), else one it runs itself. It returns by
// the end of ctx; budget is the scrape's time-out the replica is told. at
// is when the scrape started.
//
// The scrape runs on the goroutine of the Source that starts it, under
// that Source's ctx, so that it costs no goroutine (nor the stack a parse
// grows one to) and ends when that Source gives up, as it would alone.
// Those that joined it then scrape again themselves, within what is left
// of their own time.
func (g *group) fetch(ctx context.Context, j job, after time.Time, budget time.Duration) (at time.Time, s body.Sample, err error) {
	e := g.ex
	for {
		e.mu.Lock()
		now := e.now()
		g.sweep(now)
		f := g.flights[j.key]
		if f == nil || !f.at.After(after) || finished(f) && (e.maxAge < 0 || now.Sub(f.at) > e.maxAge) {
			f = &flight{at: now, done: make(chan struct{})}
			g.flights[j.key] = f
			e.mu.Unlock()
			g.run(ctx, f, j, budget)
			return f.at, f.sample, f.err
		}
		e.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return f.at, body.Sample{}, ctx.Err()
		}
		if !f.cut {
			return f.at, f.sample, f.err
		}
	}
}

// run scrapes and reads one replica, for its own Source and f's waiters.
func (g *group) run(ctx context.Context, f *flight, j job, budget time.Duration) {
	buf, _ := g.buf.Get().(*[]body.Series)
	if buf == nil {
		buf = new([]body.Series)
	}
	ss, err := g.client.scrape(ctx, j.url, budget, (*buf)[:0])
	if err == nil {
		f.sample, err = body.ReadSample(ss, g.client.fams, &g.key.names)
	}
	if cap(ss) <= maxPooledSeries {
		*buf = ss
		g.buf.Put(buf)
	}
	f.err, f.cut = err, err != nil && ctx.Err() != nil

	e := g.ex
	e.mu.Lock()
	defer e.mu.Unlock()
	close(f.done)
	if e.maxAge < 0 || f.cut {
		g.forget(j.key, f)
	}
}

// forget drops f from the flights, unless another has taken its place.
func (g *group) forget(key string, f *flight) {
	if g.flights[key] == f {
		delete(g.flights, key)
	}
}

// sweep drops the finished scrapes too old to share, at most once per
// MaxAge, so that replicas that come and go (pod addresses) do not pile up.
func (g *group) sweep(now time.Time) {
	e := g.ex
	if e.maxAge < 0 || now.Sub(g.swept) < e.maxAge {
		return
	}
	g.swept = now
	for key, f := range g.flights {
		if finished(f) && now.Sub(f.at) > e.maxAge {
			delete(g.flights, key)
		}
	}
}

func finished(f *flight) bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}
