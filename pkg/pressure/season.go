package pressure

import (
	"context"
	"time"
)

// The history a source that keeps it yields for the seasonal forecast
// (docs/compensation.md, "The seasonal forecast"). The grid, its length and
// the windows are the forecast's: pkg/signal/seasonal reads them by
// bucket.
const (
	// SeasonStep is the spacing of the history's points, on the clock's
	// multiples of it: the forecast's bucket (seasonal.Bucket).
	SeasonStep = 5 * time.Minute
	// SeasonLong is how far back the long history, which the forecast
	// finds its period in, reaches: eight days (seasonal.Buckets
	// buckets), so a week's period is read from a whole day of pairs.
	SeasonLong = 8 * 24 * time.Hour
	// SeasonDetectEvery is how often the long history is read: a season
	// found in eight days does not change within the hour.
	SeasonDetectEvery = time.Hour
	// SeasonLevel is the window of recent demand the forecast reads the
	// current level from, and SeasonSmooth the half-width of the window
	// one period ago it reads the demand to come from.
	SeasonLevel  = 30 * time.Minute
	SeasonSmooth = 30 * time.Minute
	// SeasonHorizon is how far past the instant one period ago the window
	// it reads reaches beyond SeasonSmooth: the longest lag the forecast
	// from a source's history looks ahead by (a longer one reads as this).
	SeasonHorizon = time.Hour
	// SeasonDay and SeasonWeek are the periods the forecast looks for.
	SeasonDay  = 24 * time.Hour
	SeasonWeek = 7 * SeasonDay
)

// DemandPoint is the workload's raw demand (ComputePressure.Demand) at
// one instant of its past.
type DemandPoint struct {
	At     time.Time
	Demand float64
}

// Season is the workload's past as a source that keeps it reads it for
// the seasonal forecast, on the SeasonStep grid, oldest first. An instant
// with no replica to read has no point.
type Season struct {
	// Recent holds the last SeasonLevel of demand and the windows around
	// the same instant one day and one week ago (SeasonSmooth before it
	// to SeasonHorizon plus SeasonSmooth after it).
	Recent []DemandPoint
	// Long holds the last SeasonLong of demand when the source read it
	// for this sample (once per SeasonDetectEvery); nil otherwise.
	Long []DemandPoint
}

// SeasonSource is a source that holds the workload's history itself (a
// Prometheus server keeps what it scraped), so the seasonal forecast reads
// it from the source instead of keeping its own.
type SeasonSource interface {
	Source
	// ObserveSeason reads the history at the instant at, each past
	// instant's replicas folded into raw demand by compute. A failed
	// read returns what it read and the error.
	ObserveSeason(ctx context.Context, at time.Time, compute ComputeCollector) (Season, error)
}

// SeasonWindow is a span of the history: its points lie on the SeasonStep
// grid from Start to End, both included.
type SeasonWindow struct{ Start, End time.Time }

// SeasonRecentWindows are the windows a source's Season.Recent holds at
// the grid instant grid, in this order: the same instant one week and one
// day ago (SeasonSmooth before it to SeasonHorizon plus SeasonSmooth after
// it), then the last SeasonLevel up to grid.
func SeasonRecentWindows(grid time.Time) [3]SeasonWindow {
	var out [3]SeasonWindow
	for i, p := range [...]time.Duration{SeasonWeek, SeasonDay} {
		out[i] = SeasonWindow{Start: grid.Add(-p - SeasonSmooth), End: grid.Add(-p + SeasonHorizon + SeasonSmooth)}
	}
	out[2] = SeasonWindow{Start: grid.Add(-SeasonLevel + SeasonStep), End: grid}
	return out
}

// SeasonLongWindow is the window a source's Season.Long holds when read
// at the grid instant at: the SeasonLong up to it.
func SeasonLongWindow(at time.Time) SeasonWindow {
	return SeasonWindow{Start: at.Add(-(SeasonLong/SeasonStep - 1) * SeasonStep), End: at}
}

// seasonReadSpan is the longest window one read of the history asks for:
// a day on the grid is 288 points, far inside a server's limit of points
// per answer and a client's bound on its size.
const seasonReadSpan = 24 * time.Hour

// Reads cuts w into the windows a source asks for one at a time, oldest
// first: a day each, the last what remains.
func (w SeasonWindow) Reads() []SeasonWindow {
	var out []SeasonWindow
	for start := w.Start; !start.After(w.End); start = start.Add(seasonReadSpan) {
		end := start.Add(seasonReadSpan - SeasonStep)
		if end.After(w.End) {
			end = w.End
		}
		out = append(out, SeasonWindow{Start: start, End: end})
	}
	return out
}
