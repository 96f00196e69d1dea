package pressure

import (
	"testing"
	"time"
)

// TestSeasonReadsCoverTheWindowOnce: the long history's window is cut
// into day-long reads that meet end to end on the grid, none longer than
// a day, the last ending where the window does.
func TestSeasonReadsCoverTheWindowOnce(t *testing.T) {
	at := time.Date(2026, 12, 4, 13, 0, 0, 0, time.UTC)
	w := SeasonLongWindow(at)
	reads := w.Reads()
	if len(reads) != 8 {
		t.Fatalf("%d reads of eight days, want 8", len(reads))
	}
	points := 0
	for i, r := range reads {
		if i == 0 && !r.Start.Equal(w.Start) || i > 0 && !r.Start.Equal(reads[i-1].End.Add(SeasonStep)) {
			t.Fatalf("read %d starts at %v after one ending %v", i, r.Start, reads[i-1].End)
		}
		if r.End.Sub(r.Start) >= seasonReadSpan {
			t.Errorf("read %d spans %v", i, r.End.Sub(r.Start))
		}
		points += int(r.End.Sub(r.Start)/SeasonStep) + 1
	}
	if !reads[len(reads)-1].End.Equal(at) || points != int(SeasonLong/SeasonStep) {
		t.Errorf("the reads end at %v with %d points; want %v and %d", reads[len(reads)-1].End, points, at, SeasonLong/SeasonStep)
	}
}
