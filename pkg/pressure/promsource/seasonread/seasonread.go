// Package seasonread decides when a prometheus source reads the history
// the seasonal forecast needs (pressure.SeasonSource), and keeps what it
// read between samples. How one window is asked and folded into demand
// is the source's (a Read); this package is the schedule:
//
//   - The recent windows (pressure.SeasonRecentWindows) are read again
//     each time the grid moves (every pressure.SeasonStep), the long
//     history (pressure.SeasonLongWindow, a read per day) each time the
//     hour does (pressure.SeasonDetectEvery), each at a phase of the
//     target's own: a hash of its key (Phases), so targets spread their
//     reads over the step and the hour, and targets asking the same (and
//     two scaler replicas) read at the same instants and share them.
//   - A cold start reads nothing: the first reads fall at the target's
//     phases, within the first step and the first hour (a target whose
//     phase in the hour has only just passed reads its long history at
//     once, not an hour later), so the targets of a restarted scaler do
//     not all read eleven windows with their first sample. Until the
//     long history is read the forecast has none (docs/compensation.md).
//   - A sample reads at most one window (more only when samples are so
//     far apart that one would not keep up, see perSample), and none in
//     a target's first two samples, which its backfill and first sample
//     have: a sample costs the server its own query and at most one
//     more.
//   - A read that fails is retried at a later sample, after a backoff
//     (k8s.io/apimachinery's wait.Backoff: from 10 s, doubling, jittered,
//     at most a step), not left until the grid or the hour moves again.
package seasonread

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// Read reads one window of the history: the demand at each instant of
// its grid that has any.
type Read func(ctx context.Context, w pressure.SeasonWindow) ([]pressure.DemandPoint, error)

// quietSamples are the first samples of a target, in which nothing is
// read: the backfill's range query and the first samples' own fall there.
const quietSamples = 2

// retry is the backoff after a failed read: the next read waits 10 s,
// then 20 s, 40 s and so on up to a step (plus up to half of it at
// random, so that targets that failed together do not retry together).
var retry = wait.Backoff{Duration: 10 * time.Second, Factor: 2, Jitter: 0.5, Steps: 8, Cap: pressure.SeasonStep}

// Reads is one target's history reads: what is due, what is under way
// and what was read. It is not safe for concurrent use.
type Reads struct {
	recentPhase, longPhase time.Duration
	perSample              int
	// lead is how long a cold start's reads take at most: the quiet
	// samples, then the recent windows and the long history's days.
	lead    time.Duration
	samples int // samples seen, up to quietSamples

	// recent holds the recent windows read at the grid instant recentAt;
	// longAt is the hour the long history was last read whole for (at a
	// cold start, the hour it started in).
	recent   []pressure.DemandPoint
	recentAt time.Time
	longAt   time.Time

	pending   reading // the windows being read, one sample at a time
	backoff   wait.Backoff
	notBefore time.Time
}

// reading is the reading of one set of windows across samples.
type reading struct {
	long    bool
	at      time.Time // the grid instant (recent) or the hour (long)
	windows []pressure.SeasonWindow
	next    int
	points  []pressure.DemandPoint
}

// New returns the reads of the history asked by key (what identifies
// the target's queries on its server) for a target sampled every
// interval.
func New(key string, interval time.Duration) *Reads {
	recent, long := Phases(key)
	r := &Reads{recentPhase: recent, longPhase: long, perSample: perSample(interval), backoff: retry}
	reads := quietSamples + len(pressure.SeasonRecentWindows(time.Time{})) + len(pressure.SeasonLongWindow(time.Time{}).Reads())
	r.lead = time.Duration((reads+r.perSample-1)/r.perSample) * interval
	return r
}

// Phases are where in the step the recent windows of the history asked
// by key move (whole seconds), and where in the hour its long history
// does (whole steps, so the long history stays on the grid). They depend
// on nothing but key.
func Phases(key string) (recent, long time.Duration) {
	h := fnv.New64a()
	h.Write([]byte(key))
	sum := h.Sum64()
	recent = time.Duration(sum%uint64(pressure.SeasonStep/time.Second)) * time.Second
	long = time.Duration((sum>>32)%uint64(pressure.SeasonDetectEvery/pressure.SeasonStep)) * pressure.SeasonStep
	return recent, long
}

// perSample is how many windows a sample may read: one, unless samples
// are so far apart that one a sample would fall behind the windows due
// in an hour (three recent ones a step, the long history's days).
func perSample(interval time.Duration) int {
	due := len(pressure.SeasonRecentWindows(time.Time{}))*int(pressure.SeasonDetectEvery/pressure.SeasonStep) +
		len(pressure.SeasonLongWindow(time.Time{}).Reads())
	if interval <= 0 {
		return 1
	}
	samples := float64(pressure.SeasonDetectEvery) / float64(interval)
	return max(1, int(float64(due)/samples+0.999))
}

// At is the history at the sample instant at: the recent windows held
// (while they are at most a step behind), and the long history in the
// sample that completes its reading. It first reads, with read, what is
// due, at most perSample windows. A failed read returns what is held and
// the error; the window is read again after the backoff.
func (r *Reads) At(ctx context.Context, at time.Time, read Read) (pressure.Season, error) {
	grid := at.Add(-r.recentPhase).Truncate(pressure.SeasonStep)
	hour := at.Add(-r.longPhase).Truncate(pressure.SeasonDetectEvery).Add(r.longPhase)
	if r.samples == 0 {
		// A cold start: the first reads wait for the target's phases,
		// but for a long history whose phase has only just passed: read
		// at the next, it would come after the first hour.
		r.recentAt = grid
		if at.Sub(hour) >= r.lead {
			r.longAt = hour
		}
	}
	var (
		out pressure.Season
		err error
	)
	if r.samples >= quietSamples && !at.Before(r.notBefore) {
		out.Long, err = r.readDue(ctx, at, grid, hour, read)
	}
	r.samples = min(r.samples+1, quietSamples)
	if !r.recentAt.Before(grid.Add(-pressure.SeasonStep)) {
		out.Recent = r.recent
	}
	return out, err
}

// readDue reads up to perSample windows of what is due and returns the
// long history when its last day was read.
func (r *Reads) readDue(ctx context.Context, at, grid, hour time.Time, read Read) (long []pressure.DemandPoint, _ error) {
	for range r.perSample {
		if !r.pending.stillDue(grid, hour) {
			if r.pending = r.due(grid, hour); r.pending.windows == nil {
				return long, nil
			}
		}
		p := &r.pending
		w := p.windows[p.next]
		pts, err := read(ctx, w)
		if err != nil {
			wait := r.backoff.Step()
			r.notBefore = at.Add(wait)
			return long, fmt.Errorf("%w (read again in %v)", err, wait.Round(time.Second))
		}
		r.backoff = retry
		p.points = append(p.points, pts...)
		if p.next++; p.next < len(p.windows) {
			continue
		}
		if p.long {
			long, r.longAt = p.points, p.at
		} else {
			r.recent, r.recentAt = p.points, p.at
		}
		r.pending = reading{}
	}
	return long, nil
}

// stillDue says whether the reading under way is for the instant now due.
func (p *reading) stillDue(grid, hour time.Time) bool {
	return p.windows != nil && (p.long && p.at.Equal(hour) || !p.long && p.at.Equal(grid))
}

// due is the reading to begin: the recent windows when the grid has
// moved, else the long history when the hour has, else none.
func (r *Reads) due(grid, hour time.Time) reading {
	switch {
	case !r.recentAt.Equal(grid):
		w := pressure.SeasonRecentWindows(grid)
		return reading{at: grid, windows: w[:], points: make([]pressure.DemandPoint, 0, recentPoints(w[:]))}
	case !r.longAt.Equal(hour):
		return reading{long: true, at: hour, windows: pressure.SeasonLongWindow(hour).Reads(),
			points: make([]pressure.DemandPoint, 0, pressure.SeasonLong/pressure.SeasonStep)}
	}
	return reading{}
}

func recentPoints(ws []pressure.SeasonWindow) int {
	n := 0
	for _, w := range ws {
		n += int(w.End.Sub(w.Start)/pressure.SeasonStep) + 1
	}
	return n
}
