package scrape

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/target"
)

// The defaults of the limits.
const (
	// DefaultTimeout bounds one scrape. The sample's own deadline (80 % of
	// the sample interval by default) bounds it further.
	DefaultTimeout = 2 * time.Second
	// DefaultMaxResponseBytes bounds one response. A replica exposing the
	// contract plus the usual runtime series sends tens of kilobytes.
	DefaultMaxResponseBytes = 10 << 20
	// DefaultConcurrency bounds the scrapes in flight at once.
	DefaultConcurrency = 32
	// DefaultSeriesLimit bounds the contract's series one replica may
	// expose, as Prometheus' sample_limit does: parsed series cost far more
	// memory than their bytes (a 10 MiB body of series parses to hundreds
	// of megabytes), so the bytes limit alone does not bound a sample.
	DefaultSeriesLimit = 10000
)

// Options configure a Source.
type Options struct {
	// Targets are the replicas to scrape; at least one.
	Targets []target.Target
	// Names are the metric names read; the zero value means
	// exposition.DefaultNames.
	Names exposition.Names
	// CPULimitCores divides the CPU rate of a replica that exposes no CPU
	// limit gauge; 0 means such a replica's CPU is not measured.
	CPULimitCores float64
	// Timeout bounds each scrape; <= 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxResponseBytes bounds each response body; <= 0 means
	// DefaultMaxResponseBytes. A larger response fails that replica.
	MaxResponseBytes int64
	// Concurrency bounds scrapes in flight; <= 0 means DefaultConcurrency.
	Concurrency int
	// SeriesLimit bounds the series of the families the source reads
	// (after the filter drops every other family) one replica may expose;
	// more fails that replica, before they are parsed. <= 0 means
	// DefaultSeriesLimit.
	SeriesLimit int
	// Allow vets every address resolved and dialled. nil reaches anything:
	// only for tests and benchmarks, never for metadata-defined targets.
	// With a Profile, what is dialled is vetted by the Control its Set was
	// loaded with.
	Allow *allow.List
	// Profile, when set, is the connection profile the replicas are
	// scraped through (connprofile.Set.Resolve): its bearer token, basic
	// auth, client certificate and CA, re-read when they rotate. Its
	// time-out is the default and the ceiling of Timeout. Redirects are
	// never followed, whatever the profile says: a replica's /metrics
	// answers where it was asked.
	Profile *connprofile.Profile
	// Resolver expands DNS targets; nil means net.DefaultResolver.
	Resolver Resolver
	// Discovery expands k8s:// targets, in Namespace (the ScaledObject's);
	// required when a target is one.
	Discovery discovery.Discovery
	Namespace string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PrimeDelay: when no replica has a CPU rate yet (a target's first
	// sample), Observe reads them all again this much later, deadline
	// permitting; 0 does not (the first sample is then memory alone). The
	// scrape kind sets DefaultPrimeDelay.
	PrimeDelay time.Duration
	// Logger receives debug lines about CPU rates; nil discards.
	Logger *slog.Logger
	// Exchange, when set, shares scrapes of the same replica with the
	// other Sources built with it (see Exchange); nil scrapes alone, with
	// an Exchange of the Source's own on its Now.
	Exchange *Exchange
}

// Source scrapes the replicas. Observe calls are serialised; ErrorCounts may
// be called concurrently with them.
type Source struct {
	opts   Options
	share  *group // the Exchange's group this Source scrapes through
	static []job  // the static targets' jobs (staticJobs)
	log    *slog.Logger

	sampling sync.Mutex // one sample at a time: CPU marks need an order
	leave    sync.Once  // the Exchange's group, left once by Close

	kube *kubeSpace // nil without k8s:// targets

	mu       sync.Mutex // guards replicas and queue
	replicas map[string]*replicaState
	queue    exposition.QueueCounters
}

// New returns a Source; it does no I/O.
func New(opts Options) (*Source, error) {
	if len(opts.Targets) == 0 {
		return nil, errors.New("scrape: no targets")
	}
	if opts.Names == (exposition.Names{}) {
		opts.Names = exposition.DefaultNames()
	}
	if p := opts.Profile; p != nil && p.Timeout() > 0 && (opts.Timeout <= 0 || opts.Timeout > p.Timeout()) {
		opts.Timeout = p.Timeout()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.SeriesLimit <= 0 {
		opts.SeriesLimit = DefaultSeriesLimit
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var kube *kubeSpace
	if slices.ContainsFunc(opts.Targets, func(t target.Target) bool { return t.Kube != nil }) {
		if opts.Discovery == nil || opts.Namespace == "" {
			return nil, errors.New("scrape: a k8s:// target needs a Kubernetes discovery and a namespace")
		}
		kube = &kubeSpace{disc: opts.Discovery, namespace: opts.Namespace}
	}
	ex := opts.Exchange
	if ex == nil {
		ex = NewExchange(ExchangeOptions{Now: opts.Now, MaxAge: -1})
	}
	share, err := ex.join(&opts)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	return &Source{
		opts:     opts,
		share:    share,
		static:   staticJobs(opts.Targets),
		log:      opts.Logger,
		kube:     kube,
		replicas: map[string]*replicaState{},
	}, nil
}

// Observe scrapes every replica once. A replica that fails is left out and
// named in Missing; the replica count is the number that answered. When none
// answers, Observe fails and names them all. When there is none to ask (the
// DNS targets name Services without ready pods, and there is no static
// target), the Observation has zero replicas and nothing missing: the
// workload is scaled to zero. It returns by ctx's deadline: each scrape runs
// under min(Timeout, what is left of ctx).
//
// A CPU rate needs two reads of a replica's counter. When no replica has
// one yet (the target's first sample) but they expose the counter, Observe
// reads them all again Options.PrimeDelay later, if the deadline leaves
// room, so that a CPU-bound pool is not read as memory alone.
func (s *Source) Observe(ctx context.Context) (pressure.Observation, error) {
	s.sampling.Lock()
	defer s.sampling.Unlock()
	start := time.Now()
	obs, unrated, err := s.observe(ctx)
	if err != nil || !unrated || s.opts.PrimeDelay <= 0 {
		return obs, err
	}
	took := time.Since(start)
	if d, ok := ctx.Deadline(); ok && time.Until(d) < s.opts.PrimeDelay+took {
		s.log.Debug("first sample: no room for a second read, resource is memory only")
		return obs, nil
	}
	wait := time.NewTimer(s.opts.PrimeDelay)
	defer wait.Stop()
	select {
	case <-wait.C:
	case <-ctx.Done():
		return obs, nil
	}
	if again, _, err := s.observe(ctx); err == nil {
		return again, nil
	}
	return obs, nil
}

// DefaultPrimeDelay is how long after a target's first read Observe reads
// its replicas again for a CPU rate: a counter of 10 ms ticks then
// resolves 2 % of a core, and the first sample still comes well within
// the scaler's warm-up wait.
const DefaultPrimeDelay = 500 * time.Millisecond

// observe is one round of Observe; unrated reports that answered replicas
// expose a CPU counter but none has a rate yet.
func (s *Source) observe(ctx context.Context) (obs pressure.Observation, unrated bool, err error) {
	if err := ctx.Err(); err != nil {
		return pressure.Observation{}, false, err
	}
	at := s.opts.Now()

	expandCtx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	exp := expand(expandCtx, s.opts.Targets, s.static, s.opts.Resolver, s.kube, s.opts.Allow, s.opts.Concurrency)
	cancel()

	// A scrape shared with other Sources must have started after this
	// Source's own previous one of the replica: never the same one again.
	after := make([]time.Time, len(exp.jobs))
	s.mu.Lock()
	for i, j := range exp.jobs {
		if st := s.replicas[j.name]; st != nil {
			after[i] = st.scraped
		}
	}
	s.mu.Unlock()
	results := make([]result, len(exp.jobs))
	forEach(len(exp.jobs), s.opts.Concurrency, func(i int) {
		results[i] = s.scrapeOne(ctx, exp.jobs[i], after[i])
	})

	s.mu.Lock()
	obs, unrated = s.fold(results, exp.missing, at)
	s.mu.Unlock()
	obs.Starting, obs.Terminating = exp.starting, exp.terminating
	if len(obs.Replicas) == 0 && len(obs.Missing) > 0 {
		return pressure.Observation{}, false, noAnswer(obs.Missing)
	}
	return obs, unrated, nil
}

// scrapeOne reads one replica, through a scrape started after after (this
// Source's previous one of it) that other Sources may share.
func (s *Source) scrapeOne(ctx context.Context, j job, after time.Time) result {
	r := result{name: j.name, pod: j.pod, at: s.opts.Now()}
	if err := ctx.Err(); err != nil {
		// Queued behind slow replicas past the sample's deadline.
		r.err = fmt.Errorf("not scraped before the sample deadline: %w", err)
		return r
	}
	sctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	budget := s.opts.Timeout
	if d, ok := sctx.Deadline(); ok {
		budget = time.Until(d)
	}
	var err error
	r.at, r.sample, err = s.share.fetch(sctx, j, after, budget)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		err = fmt.Errorf("sample deadline reached: %w", err)
	case sctx.Err() != nil:
		err = fmt.Errorf("timed out after %s: %w", s.opts.Timeout, err)
	}
	r.err = err
	return r
}

// ErrorCounts returns, per replica, the failed scrapes since the source
// first targeted it (zero for replicas that always answered). A replica no
// sample has targeted for ten minutes is forgotten, and its count with it.
// Meant for a counter such as barometer_scrape_errors_total{replica}.
func (s *Source) ErrorCounts() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]uint64, len(s.replicas))
	for name, st := range s.replicas {
		out[name] = st.errors
	}
	return out
}

// Close releases this source's share of the kept-alive connections (the
// last Source of an Exchange's group closes them) and its use of its
// namespace's Kubernetes watch. Observe still works after it,
// reconnecting.
func (s *Source) Close() error {
	s.leave.Do(s.share.leave)
	s.kube.close()
	return nil
}

// maxPooledSeries keeps one replica with unusually many series from pinning
// their memory.
const maxPooledSeries = 1024

// forEach runs fn(0..n-1) on at most conc goroutines and returns once every
// call has: no goroutine outlives the sample.
func forEach(n, conc int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, max(conc, 1)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

func noAnswer(missing []pressure.MissingReplica) error {
	errs := make([]error, 0, len(missing)+1)
	errs = append(errs, fmt.Errorf("scrape: none of %d replicas answered", len(missing)))
	for _, m := range missing {
		errs = append(errs, fmt.Errorf("%s: %w", m.Name, m.Err))
	}
	return errors.Join(errs...)
}
