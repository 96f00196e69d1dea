package seasonal

import (
	"math"
	"sort"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// PeriodStands is how long a period Held found in the source's long
// history stands: two of its reads, so one that fails leaves the period in place
// until the next, and a source that cannot read it any more ends the
// forecast rather than forecasting from a season it can no longer see.
const PeriodStands = 2 * pressure.SeasonDetectEvery

// Held is the seasonal forecast when the source holds the history
// (pressure.SeasonSource, a Prometheus server): the period found in the
// last long history the source read (a day or a week in buckets, 0 when
// neither) and the newest instant of it. That is all the computer keeps;
// the history itself is the source's.
type Held struct {
	period  int
	foundAt time.Time
	hasRead bool // a long history has been read
	// read is the recent windows while a forecast reads them (here, not
	// on the stack, because the interface the forecast reads through
	// would move them to the heap at every sample).
	read demandBuckets
}

// Forecast is the demand expected at last plus lag from the source's
// history: a long history finds the period as the computer's own would
// (Memory.detect over the same buckets), and the recent windows give
// the forecast as the computer's own would (forecastFrom). The windows
// reach pressure.SeasonHorizon ahead, so a longer lag looks that far.
func (h *Held) Forecast(season *pressure.Season, last time.Time, lag time.Duration) float64 {
	if season.Long != nil {
		h.detect(season.Long)
	}
	if h.period == 0 || last.Sub(h.foundAt) > PeriodStands || len(season.Recent) == 0 {
		return 0
	}
	// The level is read from the newest buckets the source holds: its
	// windows end a little before the sample (pressure.SeasonSource).
	newest := bucketOf(season.Recent[len(season.Recent)-1].At)
	h.read.points = season.Recent
	f := forecastFrom(&h.read, newest, last, int64(h.period), min(lag, pressure.SeasonHorizon))
	h.read.points = nil
	return f
}

// detect finds the period in a long history, oldest first: its points are
// put in the buckets of a history like the computer's own (Memory), and
// tested as that one is. The buckets live only while it runs.
func (h *Held) detect(long []pressure.DemandPoint) {
	h.period, h.foundAt, h.hasRead = 0, time.Time{}, true
	var s Memory
	for _, p := range long {
		b := bucketOf(p.At)
		if !s.started {
			s.started, s.origin = true, b
		}
		if b < s.newest || b < s.origin || math.IsNaN(p.Demand) {
			continue
		}
		s.set(b, float32(p.Demand))
		s.newest = b
	}
	if !s.started {
		return
	}
	s.detect()
	h.period, h.foundAt = s.period, long[len(long)-1].At
}

// HasHistory reports whether a long history has been read: until then
// there is no forecast for want of history.
func (h *Held) HasHistory() bool { return h.hasRead }

// Period is the period found in the last long history read: a day or a
// week, 0 when neither.
func (h *Held) Period() time.Duration { return time.Duration(h.period) * Bucket }

// demandBuckets reads a source's points by bucket: the point in the
// bucket, NaN when there is none. The points are on the bucket grid,
// oldest first.
type demandBuckets struct{ points []pressure.DemandPoint }

func (d *demandBuckets) at(b int64) float64 {
	i := sort.Search(len(d.points), func(i int) bool { return bucketOf(d.points[i].At) >= b })
	if i < len(d.points) && bucketOf(d.points[i].At) == b {
		return d.points[i].Demand
	}
	return math.NaN()
}
