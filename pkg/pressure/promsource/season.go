package promsource

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
)

// The seasonal forecast's history is Prometheus' own: the source reads it
// with the sample's own compute queries, asked together as one range
// query per window (see combinedQuery), folded step by step as a sample is
// (foldReplicas) and reduced to raw demand (pressure.Season). Every window
// lies on the pressure.SeasonStep grid, so the targets that ask the same
// queries at the same aligned instant share each answer through the pool,
// and a window read once serves every sample until the grid moves: the
// recent windows are read again every SeasonStep, the long history every
// SeasonDetectEvery. What the source keeps between samples is those
// windows' demand (Source.season): no more than a few dozen points.

var _ pressure.SeasonSource = (*Source)(nil)

// seasonDims are the dimensions the demand is read from.
var seasonDims = [...]dimension{dimReplicas, dimActivation, dimResource, dimCPU, dimMemory, dimMemoryLimit, dimWalState}

// seasonCache is what the source keeps of the history between samples:
// the recent windows read at the grid instant recentAt, and the hour the
// long history was last read in.
type seasonCache struct {
	recentAt time.Time
	recent   []pressure.DemandPoint
	longAt   time.Time
}

// ObserveSeason reads the history the seasonal forecast needs at the
// instant at (pressure.SeasonSource): the recent windows when the grid
// has moved since they were read, and the long history when the hour has.
// Every window ends at a grid instant at or before at, so every point is
// past. A read that fails is tried again when the grid (the recent
// windows) or the hour (the long history) moves, not at every sample: a
// server that refuses it, or an answer over the response bound, is not
// asked again every interval.
//
// Each target moves its grid and its hour at a phase of its own (see
// seasonPhase), so the history reads of many targets are spread over the
// step and the hour instead of all falling on the same instant, ahead of
// the samples' own queries in the pool.
func (s *Source) ObserveSeason(ctx context.Context, at time.Time, compute pressure.ComputeCollector) (pressure.Season, error) {
	query := s.seasonQuery()
	recentPhase, longPhase := seasonPhase(s.flightKey + "\x00" + query)
	grid := at.Add(-recentPhase).Truncate(pressure.SeasonStep)
	hour := at.Add(-longPhase).Truncate(pressure.SeasonDetectEvery).Add(longPhase)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.seasonMu.Lock()
	defer s.seasonMu.Unlock()
	var out pressure.Season
	var errs []error
	if !s.season.recentAt.Equal(grid) {
		recent, err := s.readRecent(ctx, query, grid, compute)
		errs = append(errs, err)
		s.season.recentAt, s.season.recent = grid, recent
	}
	out.Recent = s.season.recent
	if !s.season.longAt.Equal(hour) {
		long, err := s.readLong(ctx, query, hour, compute)
		errs = append(errs, err)
		s.season.longAt, out.Long = hour, long
	}
	return out, errors.Join(errs...)
}

// seasonPhase is where in the step the recent windows of the history
// asked by key move (whole seconds), and where in the hour its long
// history does (whole steps, so the long history stays on the grid). It
// depends on nothing but key: the targets asking the same move together,
// and share their reads (and so do two scaler replicas' reads, at the
// server).
func seasonPhase(key string) (recent, long time.Duration) {
	h := fnv.New64a()
	h.Write([]byte(key))
	sum := h.Sum64()
	recent = time.Duration(sum%uint64(pressure.SeasonStep/time.Second)) * time.Second
	long = time.Duration((sum>>32)%uint64(pressure.SeasonDetectEvery/pressure.SeasonStep)) * pressure.SeasonStep
	return recent, long
}

// seasonQuery is the combined query of the dimensions the demand is read
// from.
func (s *Source) seasonQuery() string {
	var dims []dimension
	for _, d := range seasonDims {
		if s.queries[d] != "" {
			dims = append(dims, d)
		}
	}
	return s.combinedQuery(dims)
}

// recentWindows are the recent windows relative to the grid instant
// (pressure.SeasonRecentWindows) as range queries.
func recentWindows(grid time.Time) []v1.Range {
	var out []v1.Range
	for _, w := range pressure.SeasonRecentWindows(grid) {
		out = append(out, v1.Range{Start: w.Start, End: w.End, Step: pressure.SeasonStep})
	}
	return out
}

func (s *Source) readRecent(ctx context.Context, query string, grid time.Time, compute pressure.ComputeCollector) ([]pressure.DemandPoint, error) {
	windows := recentWindows(grid)
	steps := 0
	for _, r := range windows {
		steps += int(r.End.Sub(r.Start)/r.Step) + 1
	}
	// Kept until the grid moves: exactly as long as it needs to be.
	out := make([]pressure.DemandPoint, 0, steps)
	for _, r := range windows {
		pts, err := s.readDemand(ctx, query, r, compute)
		if err != nil {
			return nil, err
		}
		out = append(out, pts...)
	}
	return out, nil
}

// readLong reads the SeasonLong before hour a day at a time
// (pressure.SeasonWindow.Reads: a range of eight days would be eight
// times as large an answer, against the response bound), oldest first.
func (s *Source) readLong(ctx context.Context, query string, hour time.Time, compute pressure.ComputeCollector) ([]pressure.DemandPoint, error) {
	out := make([]pressure.DemandPoint, 0, pressure.SeasonLong/pressure.SeasonStep)
	for _, w := range pressure.SeasonLongWindow(hour).Reads() {
		pts, err := s.readDemand(ctx, query, v1.Range{Start: w.Start, End: w.End, Step: pressure.SeasonStep}, compute)
		if err != nil {
			return nil, err
		}
		out = append(out, pts...)
	}
	return out, nil
}

// readDemand asks query (seasonQuery) over r and folds each step into
// demand. The answer shared is the demand, so its key says how it is
// read.
func (s *Source) readDemand(ctx context.Context, query string, r v1.Range, compute pressure.ComputeCollector) ([]pressure.DemandPoint, error) {
	v, err := s.sendRange(ctx, querypool.History, query, r, strconv.FormatFloat(compute.ActivationWorkingSetTarget, 'g', -1, 64),
		func(v model.Value) (any, error) { return s.foldDemand(v, r, compute) })
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: history of the seasonal forecast from %s to %s: %w%s", s.server, r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339), err, s.authHint(err))
	}
	return v.([]pressure.DemandPoint), nil
}
