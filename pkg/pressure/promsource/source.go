package promsource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promclient"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/seasonread"
)

// querier is the one call Source needs from v1.API; tests substitute it.
type querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
}

// Source reads pressure from a Prometheus server. It is safe for concurrent
// use. Its only state between samples is the queue counters' (see
// foldQueue) and, when the seasonal forecast reads its history here, what
// of it was read and when to read more (see ObserveSeason): everything
// else is read afresh.
type Source struct {
	api     querier
	server  string
	queries [numDimensions]string
	label   model.LabelName
	timeout time.Duration
	now     func() time.Time
	align   time.Duration
	logger  *slog.Logger
	// profile names the connection profile, for errors; "" for none.
	profile string
	// failOnEmpty is Options.FailOnEmpty.
	failOnEmpty bool
	hasStore    bool
	hasQueue    bool
	// closeIdle releases the client's kept-alive connections.
	closeIdle func()
	// pool bounds and shares the queries sent to the server; flightKey
	// tells this source's requests apart from other sources' that would
	// be answered differently (another profile, other parameters or
	// headers, another response bound), so only equal ones are shared.
	pool      *querypool.Pool
	flightKey string
	// solo holds the dimensions asked alone, one bit each: those whose
	// query failed when combined (see dimLabel). refusals counts the
	// samples in a row whose combined query failed while every part
	// answered alone (see maxRefusals).
	solo     atomic.Uint32
	refusals atomic.Int32

	mu       sync.Mutex // guards counters
	counters exposition.QueueCounters

	seasonMu sync.Mutex // guards season
	season   *seasonread.Reads
	seasonQ  string // seasonQuery(), fixed with the queries
}

// alignMargin is how far before the aligned instant an aligned source
// evaluates its queries (at most half the interval).
const alignMargin = time.Second

// New checks the options and builds the client (promclient); it does not
// contact the server (a server that is down fails samples, not startup).
func New(opts Options) (*Source, error) {
	u, err := url.Parse(opts.ServerAddress)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("promsource: server address %q is not an http(s) URL", opts.ServerAddress)
	}
	q := opts.Queries
	if !q.hasPerReplica() {
		return nil, errors.New("promsource: no per-replica query, so no replica could ever be read")
	}
	if q.Resource != "" && (q.CPU != "" || q.Memory != "" || q.MemoryLimit != "") {
		return nil, errors.New("promsource: the resource query replaces the cpu, memory and memory limit queries; set one or the other")
	}
	if label := cmp.Or(opts.ReplicaLabel, DefaultReplicaLabel); !model.LegacyValidation.IsValidLabelName(label) {
		return nil, fmt.Errorf("promsource: replica label %q is not a label name", label)
	}
	c, err := promclient.New(promclient.Options{
		ServerAddress: opts.ServerAddress, MaxResponseBytes: opts.MaxResponseBytes,
		Control: opts.Control, Profile: opts.Profile,
		QueryParameters: opts.QueryParameters, CustomHeaders: opts.CustomHeaders,
		// Enough that the concurrent queries of one sample reuse them on
		// the next.
		IdleConnsPerHost: int(numDimensions),
	})
	if err != nil {
		return nil, err
	}
	s := newSource(c.API, opts)
	s.flightKey = c.Key()
	s.closeIdle = c.CloseIdleConnections
	return s, nil
}

// queryTimeout is the budget of one sample: the trigger's, else the
// profile's, else the default; never more than the profile's.
func queryTimeout(opts Options) time.Duration {
	t := opts.QueryTimeout
	if opts.Profile != nil {
		if p := opts.Profile.Timeout(); p > 0 && (t <= 0 || t > p) {
			t = p
		}
	}
	return cmp.Or(t, promclient.DefaultQueryTimeout)
}

// Close releases the connections kept alive for the next sample. The
// Source stays usable: a later Observe dials again.
func (s *Source) Close() error {
	if s.closeIdle != nil {
		s.closeIdle()
	}
	return nil
}

func newSource(api querier, opts Options) *Source {
	s := &Source{
		api:     api,
		server:  opts.ServerAddress,
		queries: opts.Queries.byDimension(),
		label:   model.LabelName(cmp.Or(opts.ReplicaLabel, DefaultReplicaLabel)),
		timeout: queryTimeout(opts),
		now:     opts.Now,
		align:   opts.Align,
		logger:  opts.Logger,

		failOnEmpty: opts.FailOnEmpty,
		pool:        opts.Pool,
		flightKey:   opts.ServerAddress,
	}
	if s.pool == nil {
		s.pool = querypool.New(0)
	}
	if opts.Profile != nil {
		s.profile = opts.Profile.Name()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	for d, q := range s.queries {
		s.hasStore = s.hasStore || q != "" && dimension(d).storage()
		s.hasQueue = s.hasQueue || q != "" && dimension(d).queue()
	}
	s.seasonQ = s.seasonQuery()
	return s
}

// Observe runs every configured query at one instant and folds the answers.
func (s *Source) Observe(ctx context.Context) (pressure.Observation, error) {
	return s.ObserveAt(ctx, s.now())
}

// ObserveAt is what Observe would have answered at the instant at: the
// queries are evaluated there (and, aligned, at the same instant before it
// that Observe would have chosen).
func (s *Source) ObserveAt(ctx context.Context, at time.Time) (pressure.Observation, error) {
	at = s.evaluatedAt(at)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.observed(s.queryAll(ctx, at), at)
}

// evaluatedAt is the instant the queries of a sample at at are evaluated:
// aligned, a little before the aligned instant, since a scrape stamped
// just before it may still be being ingested when the first replica
// asks, and the second would then read it where the first did not.
func (s *Source) evaluatedAt(at time.Time) time.Time {
	if s.align <= 0 {
		return at
	}
	return at.Truncate(s.align).Add(-min(s.align/2, alignMargin))
}

// observed folds one instant's answers: a query that failed (but the
// splits query, which fails open) fails the sample.
func (s *Source) observed(res *[numDimensions]result, at time.Time) (pressure.Observation, error) {
	for d, r := range res {
		if r.err != nil && dimension(d) != dimSplits {
			return pressure.Observation{}, r.err
		}
	}
	return s.fold(res, at)
}
