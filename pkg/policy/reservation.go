package policy

import (
	"cmp"
	"slices"
	"time"
)

// Reservation is capacity booked ahead for work that starts at a known time.
// [Start, End) is half-open: a zero Start means already started, a zero End
// means open-ended. A plain gauge of slots reserved now is one
// Reservation{Slots: n}; intervals come from a pair of timestamp gauges per
// reservation (see the package documentation).
type Reservation struct {
	Start, End time.Time
	// Slots is how many slots (runs at once) the reservation holds: replicas
	// when a replica has one slot (QueueOptions.SlotsPerReplica).
	Slots int
}

// peakReservations is the most slots reserved at once within [from, to]:
// the queue policy's reserved term, the peak concurrent reservations in
// [now, now + horizon] (docs/semantics.md, "The queue-pressure policy").
func peakReservations(rs []Reservation, from, to time.Time) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(rs))
	for _, r := range rs {
		open := r.End.IsZero()
		if r.Slots <= 0 ||
			(!open && !r.End.After(from)) || // over before the window opens
			r.Start.After(to) || // starts after it closes
			(!open && !r.Start.IsZero() && !r.End.After(r.Start)) { // empty
			continue
		}
		start := r.Start
		if start.Before(from) {
			start = from
		}
		edges = append(edges, edge{start, r.Slots})
		if !open {
			edges = append(edges, edge{r.End, -r.Slots})
		}
	}
	// At one instant ends go first: [a, b) and [b, c) never overlap.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	})
	peak, sum := 0, 0
	for _, e := range edges {
		sum += e.delta
		peak = max(peak, sum)
	}
	return peak
}
