package exposition

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestQueueFoldNilWithoutQueueSeries(t *testing.T) {
	var f QueueFold
	var c QueueCounters
	if q := f.Observation(&c, t0); q != nil {
		t.Errorf("no series: %+v, want nil", q)
	}
	// An unusable gauge is no series either.
	f.Busy(math.NaN())
	if q := f.Observation(&c, t0); q != nil {
		t.Errorf("a NaN gauge: %+v, want nil", q)
	}
}

func TestQueueFold(t *testing.T) {
	var f QueueFold
	var c QueueCounters
	// Two replicas, a and b; a splits its arrivals over two series.
	f.Arrivals("a", 10)
	f.Arrivals("a", 5)
	f.Arrivals("b", 20)
	f.RunSeconds("a", 3)
	f.Runs("a", 6)
	f.RunSeconds("b", 1)
	f.Runs("b", 4)
	f.Ready("critical", 2)
	f.Ready("batch", 7)
	f.Ready("critical", 1)
	f.Retrying("batch", 4)
	f.Retrying("", 1)
	f.Due(3)
	f.Busy(2)
	f.Busy(3)
	f.Reserved(1)
	f.Reserved(1)
	// r1 from two replicas that disagree: earliest start, latest end,
	// most slots. r2 has only an end and no slots: it holds 1, from now.
	// r3 holds no slots and says nothing.
	start, end := float64(t0.Unix()), float64(t0.Add(time.Hour).Unix())
	f.ReservationStart("r1", start+60)
	f.ReservationStart("r1", start)
	f.ReservationEnd("r1", end)
	f.ReservationEnd("r1", end-60)
	f.ReservationSlots("r1", 2)
	f.ReservationSlots("r1", 3)
	f.ReservationEnd("r2", end+0.5)
	f.ReservationSlots("r3", 0)
	f.ReservationStart("r4", -1) // unusable: r4 never appears
	// r5: one replica holds it open (end 0), another closes it; open
	// outlasts any end, in either order.
	f.ReservationEnd("r5", 0)
	f.ReservationEnd("r5", end)
	f.ReservationEnd("r6", end)
	f.ReservationEnd("r6", 0)

	got := f.Observation(&c, t0)
	want := &pressure.QueueObservation{
		Arrivals: 35, RunSeconds: 4, Runs: 10,
		Backlog: []pressure.ClassBacklog{{Class: "", Retrying: 1}, {Class: "batch", Ready: 7, Retrying: 4}, {Class: "critical", Ready: 3}},
		Due:     3, Busy: 5,
		Reservations: []pressure.Reservation{
			{Start: t0, End: t0.Add(time.Hour), Slots: 3},
			{End: t0.Add(time.Hour + 500*time.Millisecond), Slots: 1},
			{Slots: 1}, // r5
			{Slots: 1}, // r6
			{Slots: 2},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fold\n got %+v\nwant %+v", got, want)
	}
}

// TestQueueFoldHoldsAPartialReplica: one unusable series of a replica's
// counter holds the whole replica, since its sum would be partial.
func TestQueueFoldHoldsAPartialReplica(t *testing.T) {
	var c QueueCounters
	var f QueueFold
	f.Arrivals("a", 10)
	f.Arrivals("a", 5)
	f.Observation(&c, t0)
	f = QueueFold{}
	f.Arrivals("a", 12)
	f.Arrivals("a", math.NaN())
	if q := f.Observation(&c, t0.Add(time.Second)); q == nil || q.Arrivals != 15 {
		t.Errorf("queue %+v, want arrivals held at 15", q)
	}
}

func TestUnixTime(t *testing.T) {
	for v, want := range map[float64]time.Time{
		0:              {},
		-5:             {},
		math.NaN():     {},
		1.25:           time.Unix(1, 250e6).UTC(),
		math.Inf(1):    time.Unix(maxUnix, 0).UTC(),
		1e300:          time.Unix(maxUnix, 0).UTC(),
		1767225600.001: time.Unix(1767225600, 1e6).UTC(),
	} {
		got := UnixTime(v)
		if d := got.Sub(want); d < -time.Microsecond || d > time.Microsecond || got.IsZero() != want.IsZero() {
			t.Errorf("UnixTime(%v) = %v, want %v", v, got, want)
		}
	}
}

func TestFamilies(t *testing.T) {
	n := DefaultNames()
	f := n.Families()
	if len(f) != len(n.All())+2 || f[len(f)-2] != QueueRunDuration+"_sum" || f[len(f)-1] != QueueRunDuration+"_count" {
		t.Errorf("families %v", f)
	}
}
