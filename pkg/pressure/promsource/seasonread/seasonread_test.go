package seasonread

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// server answers every window with one point per grid instant, and
// records what it was asked when.
type server struct {
	asked []time.Time // the sample instant of each read
	fail  func(at time.Time) bool
	now   time.Time
}

func (s *server) read(_ context.Context, w pressure.SeasonWindow) ([]pressure.DemandPoint, error) {
	s.asked = append(s.asked, s.now)
	if s.fail != nil && s.fail(s.now) {
		return nil, errors.New("query timed out")
	}
	var out []pressure.DemandPoint
	for t := w.Start; !t.After(w.End); t = t.Add(pressure.SeasonStep) {
		out = append(out, pressure.DemandPoint{At: t, Demand: 1})
	}
	return out, nil
}

// run samples a target every interval from start for d and returns the
// instants at which a whole long history came back.
func run(t *testing.T, r *Reads, s *server, start time.Time, interval, d time.Duration) (longs []time.Time) {
	t.Helper()
	for at := start; at.Before(start.Add(d)); at = at.Add(interval) {
		s.now = at
		before := len(s.asked)
		season, _ := r.At(context.Background(), at, s.read)
		if n := len(s.asked) - before; n > r.perSample {
			t.Fatalf("%v: %d windows read in one sample, want at most %d", at, n, r.perSample)
		}
		if season.Long != nil {
			if n := len(season.Long); n != int(pressure.SeasonLong/pressure.SeasonStep) {
				t.Fatalf("%v: a long history of %d points, want %d", at, n, pressure.SeasonLong/pressure.SeasonStep)
			}
			longs = append(longs, at)
		}
	}
	return longs
}

const key = "http://prom:9090\x00sum(up)"

var start = time.Date(2026, 3, 2, 10, 17, 35, 0, time.UTC)

// A cold start reads nothing: the first reads fall at the target's own
// phases, one window a sample, so the whole long history arrives within
// the first hour (and the reads of the next hours at the same phase),
// the recent windows within the first step.
func TestAColdStartReadsAtItsPhases(t *testing.T) {
	s := &server{}
	r := New(key, 5*time.Second)
	recentPhase, longPhase := Phases(key)
	longs := run(t, r, s, start, 5*time.Second, 3*time.Hour)
	if len(s.asked) == 0 || s.asked[0].Sub(start) < 2*5*time.Second {
		t.Fatalf("first read at %v after the start, want none in the first two samples", s.asked)
	}
	firstRecent := start.Add(-recentPhase).Truncate(pressure.SeasonStep).Add(pressure.SeasonStep + recentPhase)
	if !s.asked[0].Before(firstRecent.Add(5*time.Second)) || s.asked[0].Before(firstRecent) {
		t.Errorf("first read at %v, want at the first move of the grid at the target's phase, %v", s.asked[0], firstRecent)
	}
	firstHour := start.Add(-longPhase).Truncate(time.Hour).Add(time.Hour + longPhase)
	if len(longs) != 3 {
		t.Fatalf("long history read whole at %v, want once an hour", longs)
	}
	for i, at := range longs {
		due := firstHour.Add(time.Duration(i) * time.Hour)
		// Eight days, a sample each, unless the grid moved meanwhile
		// and three recent windows went first.
		if at.Before(due) || at.After(due.Add(12*5*time.Second)) {
			t.Errorf("long history %d read whole at %v, want within 12 samples of %v", i, at, due)
		}
	}
	if longs[0].Sub(start) > time.Hour+time.Minute {
		t.Errorf("the first long history came %v after the start, want within the first hour", longs[0].Sub(start))
	}
	// 3 recent windows each time the grid moves and 8 days each time
	// the hour does, over 3 hours.
	if want := 3*3*12 + 8*3; len(s.asked) > want {
		t.Errorf("%d reads in 3 hours, want at most %d", len(s.asked), want)
	}
}

// Whenever in the hour a target starts, its long history has been read
// whole within its first hour: one whose phase has only just passed reads
// it at once rather than at the next.
func TestTheLongHistoryComesWithinTheFirstHour(t *testing.T) {
	for offset := time.Duration(0); offset < time.Hour; offset += 20 * time.Second {
		s := &server{}
		at := start.Truncate(time.Hour).Add(offset)
		longs := run(t, New(key, 5*time.Second), s, at, 5*time.Second, time.Hour)
		if len(longs) == 0 {
			t.Fatalf("started %v into the hour: no long history within the first hour", offset)
		}
	}
}

// A failed read is read again after a backoff that grows (10 s, 20 s,
// ...), not left until the hour moves; once it answers the history
// arrives.
func TestAFailedReadIsRetriedWithBackoff(t *testing.T) {
	_, longPhase := Phases(key)
	due := start.Add(-longPhase).Truncate(time.Hour).Add(time.Hour + longPhase)
	recovers := due.Add(3 * time.Minute)
	s := &server{fail: func(at time.Time) bool { return at.Before(recovers) }}
	r := New(key, 5*time.Second)
	longs := run(t, r, s, start, 5*time.Second, 2*time.Hour)
	if len(longs) == 0 || longs[0].After(recovers.Add(pressure.SeasonStep*3/2+10*5*time.Second)) {
		t.Fatalf("long history read at %v; want soon after the server recovered at %v", longs, recovers)
	}
	var failed []time.Time
	for _, at := range s.asked {
		if at.Before(recovers) {
			failed = append(failed, at)
		}
	}
	if len(failed) < 4 {
		t.Fatalf("%d failed reads before the recovery, want retries", len(failed))
	}
	// Each wait at least the previous one's base (the jitter adds up
	// to half), and none longer than a step and a half.
	for i := 2; i < len(failed); i++ {
		gap, prev := failed[i].Sub(failed[i-1]), failed[i-1].Sub(failed[i-2])
		if gap > pressure.SeasonStep*3/2+5*time.Second || gap < prev*2/3-5*time.Second {
			t.Errorf("retry %d waited %v after %v; want a backoff growing to at most a step", i, gap, prev)
		}
	}
}

// Samples far apart read more than one window each, so the recent ones
// keep up with the grid.
func TestFarApartSamplesReadMore(t *testing.T) {
	for interval, want := range map[time.Duration]int{time.Second: 1, 5 * time.Second: 1, time.Minute: 1, 2 * time.Minute: 2, 10 * time.Minute: 8} {
		if got := perSample(interval); got != want {
			t.Errorf("perSample(%v) = %d, want %d", interval, got, want)
		}
	}
	s := &server{}
	r := New(key, 10*time.Minute)
	if longs := run(t, r, s, start, 10*time.Minute, 4*time.Hour); len(longs) < 3 {
		t.Errorf("at a 10-minute interval the long history was read whole %d times in 4 hours, want each hour after the first", len(longs))
	}
}

// Two targets asking the same (or two scaler replicas) read the same
// windows at the same samples, whenever each started, so their reads
// are shared.
func TestTargetsAskingTheSameReadTogether(t *testing.T) {
	a, b := &server{}, &server{}
	ra, rb := New(key, 5*time.Second), New(key, 5*time.Second)
	run(t, ra, a, start, 5*time.Second, 20*time.Minute)
	run(t, rb, b, start.Add(35*time.Second), 5*time.Second, 20*time.Minute-35*time.Second)
	if len(a.asked) == 0 || len(a.asked) != len(b.asked) {
		t.Fatalf("%d and %d reads", len(a.asked), len(b.asked))
	}
	for i := range a.asked {
		if !a.asked[i].Equal(b.asked[i]) {
			t.Errorf("read %d at %v and %v, want the same instant", i, a.asked[i], b.asked[i])
		}
	}
}
