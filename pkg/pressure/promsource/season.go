package promsource

import (
	"context"
	"fmt"
	"strconv"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/seasonread"
)

// The seasonal forecast's history is Prometheus' own: the source reads it
// with the sample's own compute queries, asked together as one range
// query per window (see combinedQuery), folded step by step as a sample is
// (foldDemand) and reduced to raw demand. When each window is read, and
// what is kept of it between samples, is seasonread's. Every window lies
// on the pressure.SeasonStep grid, so the targets that ask the same
// queries at the same aligned instant share each answer through the pool.

var _ pressure.SeasonSource = (*Source)(nil)

// seasonDims are the dimensions the demand is read from.
var seasonDims = [...]dimension{dimReplicas, dimActivation, dimResource, dimCPU, dimMemory, dimMemoryLimit, dimWalState}

// ObserveSeason reads the history the seasonal forecast needs at the
// instant at (pressure.SeasonSource), as seasonread schedules it: nothing
// at a cold start, then the windows due at the target's own phases, one a
// sample, a failed one again after a backoff. Every window ends at a grid
// instant at or before at, so every point is past.
func (s *Source) ObserveSeason(ctx context.Context, at time.Time, compute pressure.ComputeCollector) (pressure.Season, error) {
	query := s.seasonQ
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.seasonMu.Lock()
	defer s.seasonMu.Unlock()
	if s.season == nil {
		s.season = seasonread.New(s.flightKey+"\x00"+query, s.align)
	}
	return s.season.At(ctx, at, func(ctx context.Context, w pressure.SeasonWindow) ([]pressure.DemandPoint, error) {
		return s.readDemand(ctx, query, v1.Range{Start: w.Start, End: w.End, Step: pressure.SeasonStep}, compute)
	})
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
