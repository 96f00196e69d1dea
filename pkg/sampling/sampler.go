package sampling

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/barometer-scaler/barometer/pkg/decide"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// Snapshot is what the sampler publishes after every attempt: the current
// signal plus the facts about sampling that surfaces need (staleness, the
// last error, counters). A Snapshot is immutable once published.
type Snapshot struct {
	Signal signal.ScalingSignal
	// Interval is the sampler's sample interval, for staleness checks.
	Interval time.Duration
	// AttemptedAt is when the last sample was attempted (zero before any).
	AttemptedAt time.Time
	// LastErr is the last attempt's error, nil when it succeeded.
	LastErr error
	// LastDuration is how long the last attempt took.
	LastDuration time.Duration
	// Samples and Failures count attempts since start; SplitProbeFailures
	// counts samples whose split probe failed open.
	Samples, Failures, SplitProbeFailures uint64

	next chan struct{}
}

// Next returns a channel that is closed once a newer snapshot is published.
func (s *Snapshot) Next() <-chan struct{} { return s.next }

// Stale reports whether the signal is older than 3 x the sample interval at
// now, or has never been sampled.
func (s *Snapshot) Stale(now time.Time) bool {
	return s.Signal.WarmingUp() || now.Sub(s.Signal.SampledAt) > 3*s.Interval
}

// SamplerConfig wires a sampler.
type SamplerConfig struct {
	Source  pressure.Source
	Compute pressure.ComputeCollector
	// Storage folds the storage axis; nil leaves it empty.
	Storage *pressure.StorageCollector
	// Options says whether to probe splits (SplitAwareScaleIn).
	Options signal.Options
	// Decider folds each sample; required.
	Decider decide.Decider
	// Interval between samples; <= 0 falls back to signal.DefaultSampleInterval.
	Interval time.Duration
	// Timeout bounds one Observe call; <= 0 means 80 % of Interval.
	Timeout time.Duration
	// SplitFootprintTTL: see DefaultSplitFootprintTTL.
	SplitFootprintTTL time.Duration
	// Align samples at the multiples of Interval on the clock, after a
	// first sample at once (see Run); otherwise every Interval from start.
	// An aligned sample is folded at its instant, the multiple of Interval
	// it belongs to, not at the moment its source answered: two replicas
	// then fold the same data at the same time and agree exactly.
	Align bool
	// Backfill is how many past aligned samples an aligned sampler folds
	// before its first one, when its source can observe the past
	// (pressure.HistorySource) and its decider can fold without deciding
	// (decide.Warmer). A replica that starts late then holds the state (the
	// lead's window, the gate, the smoothing) of one that has run all
	// along. 0 folds none.
	Backfill int
	// After, when set, consumes each sample that was observed and
	// decided, once its snapshot is published (victim hints): it reads
	// what the decider read and changes nothing the surfaces serve.
	After func(ctx context.Context, obs pressure.Observation, in signal.Input)
	// History is how many published samples to keep for History (the
	// status page; DefaultHistory); 0 keeps none.
	History int
	Clock   Clock
	Logger  *slog.Logger
}

// Sampler runs a source on a timer, folds each observation through its
// decider and publishes the result. Load is safe for concurrent use and never
// blocks or allocates; Run and SampleOnce are serialised internally.
type Sampler struct {
	cfg     SamplerConfig
	decider decide.Decider
	splits  *splitTracker
	// seasons is the source when it holds the history the seasonal
	// forecast reads (pressure.SeasonSource) and the forecast is on; nil
	// otherwise, and the computer keeps its own.
	seasons pressure.SeasonSource
	starts  startupClock // owned by the sampling goroutine (under mu)
	history *history     // nil when none is kept
	// failures says which failed samples to log (under mu).
	failures failureLog

	mu      sync.Mutex // serialises sampling
	current atomic.Pointer[Snapshot]
}

// NewSampler returns a sampler that publishes the warming-up signal until its
// first sample.
func NewSampler(cfg SamplerConfig) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = signal.DefaultSampleInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = cfg.Interval * 4 / 5
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Sampler{cfg: cfg, decider: cfg.Decider, splits: newSplitTracker(cfg.SplitFootprintTTL), history: newHistory(cfg.History)}
	if f := cfg.Options.Forecast; f == signal.ForecastOn || f == signal.ForecastOnly {
		s.seasons, _ = cfg.Source.(pressure.SeasonSource)
	}
	s.current.Store(&Snapshot{
		Signal:   s.decider.WarmingUp(),
		Interval: cfg.Interval,
		next:     make(chan struct{}),
	})
	return s
}

// Load returns the latest snapshot. It never blocks and never allocates.
func (s *Sampler) Load() *Snapshot { return s.current.Load() }

// History appends the kept samples to dst, oldest first: none unless
// SamplerConfig.History is set. The copy is the caller's cost; sampling
// pays one O(1) record per publish.
func (s *Sampler) History(dst []HistoryPoint) []HistoryPoint { return s.history.appendTo(dst) }

// Interval is the sample interval in force.
func (s *Sampler) Interval() time.Duration { return s.cfg.Interval }

// Run samples at once, then every Interval until ctx ends. With Align, the
// samples after the first fall at the multiples of Interval on the clock:
// aligned to the clock rather than to its own start, two scaler replicas
// sample a workload at the same instants (to the precision of their
// clocks), so the HPA reads the same value whichever it asks.
func (s *Sampler) Run(ctx context.Context) {
	s.onOwnGoroutine(func() { s.backfill(ctx) })
	if wait := Aligned(s.cfg.Clock.Now(), s.cfg.Interval); s.cfg.Align && wait < s.cfg.Interval {
		first, stopFirst := s.cfg.Clock.NewTicker(wait)
		s.sample(ctx)
		select {
		case <-ctx.Done():
			stopFirst()
			return
		case <-first:
		}
		stopFirst()
	}
	ticks, stop := s.cfg.Clock.NewTicker(s.cfg.Interval)
	defer stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

// sample runs SampleOnce on a goroutine of its own (see onOwnGoroutine).
func (s *Sampler) sample(ctx context.Context) {
	s.onOwnGoroutine(func() { s.SampleOnce(ctx) })
}

// onOwnGoroutine runs fn on a goroutine of its own and waits for it. The
// sampler's goroutine, parked between samples, then keeps the smallest
// stack (2 KiB) rather than the largest fn grew it to: a stack grown to
// 4 KiB is never shrunk back while anything is parked on it. 7 KiB a
// target at 1,000 host targets before samples ran apart, 4 KiB before the
// backfill did too (bench/abuse -targets; BenchmarkParkedSamplers).
func (s *Sampler) onOwnGoroutine(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

// backfill folds the Backfill aligned instants before now into the
// decider, oldest first, without publishing. They are read in one
// request (pressure.HistorySource.ObservePast), so a starting target
// costs its source what one sample does, not one request per instant. A
// past instant that failed is left out, as a live one would be; a read
// that fails leaves the decider cold.
func (s *Sampler) backfill(ctx context.Context) {
	past, ok := s.cfg.Source.(pressure.HistorySource)
	warmer, warms := s.decider.(decide.Warmer)
	if !s.cfg.Align || s.cfg.Backfill <= 0 || !ok || !warms {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.cfg.Clock.Now().Truncate(s.cfg.Interval).Add(-time.Duration(s.cfg.Backfill) * s.cfg.Interval)
	obsCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	observed, err := past.ObservePast(obsCtx, first, s.cfg.Interval, s.cfg.Backfill)
	cancel()
	if err != nil {
		s.cfg.Logger.Info("backfill failed; the signal starts from its first sample", "err", err)
		return
	}
	folded := 0
	for _, p := range observed {
		if p.Err != nil {
			s.cfg.Logger.Debug("backfill sample failed; left out", "at", p.At, "err", p.Err)
			continue
		}
		// A past sample reads no history: only the live samples forecast.
		warmer.Warm(p.At, p.Observation, s.input(p.Observation, s.noSeason(), p.At, p.Observation.MeasuredAt, &Snapshot{}))
		folded++
	}
	s.cfg.Logger.Debug("backfilled", "samples", folded, "of", s.cfg.Backfill)
}

// Aligned is how long after now the next multiple of interval falls (the
// multiples are counted from the zero time, the same for every clock).
// At a multiple it is a whole interval.
func Aligned(now time.Time, interval time.Duration) time.Duration {
	return now.Truncate(interval).Add(interval).Sub(now)
}

// SampleOnce takes one sample and publishes the result. A failed sample keeps
// the previous signal and records the error.
func (s *Sampler) SampleOnce(ctx context.Context) *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()

	start := s.cfg.Clock.Now()
	at := start
	if s.cfg.Align {
		at = start.Truncate(s.cfg.Interval)
	}
	obsCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	season := s.readSeason(obsCtx, at)
	obs, err := s.cfg.Source.Observe(obsCtx)
	seasonRead := season()
	cancel()
	now := s.cfg.Clock.Now()
	if !s.cfg.Align {
		at = now
	}

	prev := s.current.Load()
	if err != nil && ctx.Err() != nil {
		// The sampler is stopping: the sample was cut short on purpose,
		// which is no failure of the workload's and nothing to warn about.
		s.cfg.Logger.Debug("sample cancelled; the sampler is stopping")
		return prev
	}
	next := &Snapshot{
		Signal:             prev.Signal,
		Interval:           s.cfg.Interval,
		AttemptedAt:        now,
		Samples:            prev.Samples + 1,
		Failures:           prev.Failures,
		SplitProbeFailures: prev.SplitProbeFailures,
		next:               make(chan struct{}),
	}
	var in signal.Input
	if err == nil {
		var sig signal.ScalingSignal
		if sig, in, err = s.decide(obs, seasonRead, at, foldedMeasuredAt(obs.MeasuredAt, at, now), next); err == nil {
			next.Signal = sig
		}
	}
	if err != nil {
		next.Failures++
	}
	s.failures.observe(s.cfg.Logger, now, err)
	next.LastErr, next.LastDuration = err, s.cfg.Clock.Now().Sub(start)
	s.current.Store(next)
	close(prev.next)
	s.history.record(next)
	if err == nil && s.cfg.After != nil {
		afterCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		s.cfg.After(afterCtx, obs, in)
		cancel()
	}
	return next
}

func (s *Sampler) decide(obs pressure.Observation, season *pressure.Season, now, measuredAt time.Time, snap *Snapshot) (signal.ScalingSignal, signal.Input, error) {
	in := s.input(obs, season, now, measuredAt, snap)
	sig, err := s.decider.Decide(now, obs, in)
	sig.MeasuredAt = obs.MeasuredAt // every decider's signal says how old its data is
	return sig, in, err
}

// input runs the collectors (and the split probe, when the options ask for
// it) over a sample folded at now, with the source's history when it holds
// one (nil otherwise).
func (s *Sampler) input(obs pressure.Observation, season *pressure.Season, now, measuredAt time.Time, snap *Snapshot) signal.Input {
	in := signal.Input{Compute: s.cfg.Compute.Collect(obs), MeasuredAt: measuredAt, Starting: obs.Starting, Terminating: obs.Terminating,
		MeasuredStartup: s.starts.observe(obs, now), Season: season}
	if s.cfg.Storage != nil && obs.Trees != nil {
		in.Storage = s.cfg.Storage.Collect(obs.Trees, now)
	} else {
		in.Storage = pressure.StoragePressure{Accounts: []pressure.WalAccountPressure{}}
	}
	if s.cfg.Options.SplitAwareScaleIn {
		in.SplitInFlight = s.probeSplits(obs, now, snap)
	}
	return in
}

// probeSplits fails open, per replica: a footprint that cannot be read
// counts as no split in flight (and the failure is counted and logged),
// because a probe that failed closed would hold scale-in for as long as it
// stays broken. The footprints the other replicas did report still count,
// so one replica's broken gauge does not turn split-aware scale-in off for
// all (see splitTracker.update).
func (s *Sampler) probeSplits(obs pressure.Observation, now time.Time, snap *Snapshot) bool {
	if obs.SplitsErr != nil {
		snap.SplitProbeFailures++
		s.cfg.Logger.Warn("split probe failed; assuming no split in flight where the footprint was unreadable", "err", obs.SplitsErr)
	}
	return s.splits.update(obs, now) > 0
}

// foldedMeasuredAt is the measurement time the decider folds for data
// measured at measuredAt, in a sample folded at at and finished at now. An
// aligned sample folds at the multiple of its interval it began at, so data
// measured after that instant (a scrape that answered a few milliseconds
// into the sample) would read as measured at or after the fold: no age,
// and never stale. It is folded as measured as long before at as it was
// before now, which keeps its real age. Data measured before at (a
// Prometheus evaluation at the aligned instant) is kept as it is, so two
// replicas fold it alike; so is an unknown (zero) measurement time.
func foldedMeasuredAt(measuredAt, at, now time.Time) time.Time {
	if measuredAt.IsZero() || !measuredAt.After(at) {
		return measuredAt
	}
	return at.Add(-max(0, now.Sub(measuredAt)))
}

// readSeason starts reading the source's history at the instant at,
// beside the sample's own queries, when the source holds it; the function
// it returns waits for the read. A read that fails leaves the forecast
// what it read (nothing, often): the sample stands on its measurement.
func (s *Sampler) readSeason(ctx context.Context, at time.Time) func() *pressure.Season {
	if s.seasons == nil {
		return func() *pressure.Season { return nil }
	}
	var season pressure.Season
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		if season, err = s.seasons.ObserveSeason(ctx, at, s.cfg.Compute); err != nil {
			s.cfg.Logger.Warn("reading the history of the seasonal forecast failed; no forecast from what was not read", "err", err)
		}
	}()
	return func() *pressure.Season {
		<-done
		return &season
	}
}

// noSeason is the history of a sample that reads none: nil when the
// computer keeps its own, else an empty one, so the computer does not
// start keeping its own.
func (s *Sampler) noSeason() *pressure.Season {
	if s.seasons == nil {
		return nil
	}
	return &pressure.Season{}
}
