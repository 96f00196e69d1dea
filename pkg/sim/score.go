package sim

import (
	"cmp"
	"time"
)

// Score is how one run did: the metric-delay model's counts
// (docs/semantics.md, "The tables and the jump test"), then the SPEC
// Research Group elasticity metrics (demand = required replicas, supply =
// ready replicas, one turn per time unit).
type Score struct {
	// Changes counts decisions that changed the provisioned count;
	// Oscillation those that reversed the previous change's direction.
	Changes     int `json:"changes"`
	Oscillation int `json:"oscillation"`
	// Excess is the replica-turns provisioned above the requirement.
	Excess int `json:"excess"`
	// Shortfall counts turns with fewer ready replicas than required;
	// JumpShortfall those inside the event window.
	Shortfall     int `json:"shortfall"`
	JumpShortfall int `json:"jumpShortfall"`
	// Total is the replica-turns provisioned; Peak the largest count.
	Total int `json:"total"`
	Peak  int `json:"peak"`
	// Reaction is how many turns after the event start the ready count
	// first met the requirement; -1 when it never did or there is no event.
	Reaction int `json:"reaction"`

	// UnderAccuracy and OverAccuracy (theta_U, theta_O) are the mean
	// relative under- and over-supply, in percent.
	UnderAccuracy float64 `json:"underAccuracy"`
	OverAccuracy  float64 `json:"overAccuracy"`
	// UnderTimeshare and OverTimeshare (tau_U, tau_O) are the percent of
	// turns under- and over-supplied.
	UnderTimeshare float64 `json:"underTimeshare"`
	OverTimeshare  float64 `json:"overTimeshare"`
	// Instability (upsilon) is the percent of turn-to-turn steps in which
	// supply and demand did not move in the same direction.
	Instability float64 `json:"instability"`
	// Jitter is (supply adaptations - demand changes) per minute.
	Jitter float64 `json:"jitter"`

	// The queue's figures; a load series sheds its excess, so they are 0.
	// BacklogTurns counts turns that ended with items waiting; PeakBacklog
	// is the most items waiting at a turn's end.
	BacklogTurns int     `json:"backlogTurns"`
	PeakBacklog  float64 `json:"peakBacklog"`
	// MeanWait is the served items' mean wait in the queue and MaxWait the
	// longest wait, counting items still waiting after the last turn; in
	// seconds, counted in whole turns (an item served in the turn it
	// arrived waits 0).
	MeanWait float64 `json:"meanWait"`
	MaxWait  float64 `json:"maxWait"`
}

func score(steps []Step, s Series, initial int, turn time.Duration) Score {
	sc := Score{Reaction: -1}
	prev, lastDir := initial, 0
	var under, over float64
	var underTurns, overTurns, unstable, adaptations, demandChanges int
	for i, st := range steps {
		if dir := cmp.Compare(st.Replicas-prev, 0); dir != 0 {
			sc.Changes++
			if lastDir != 0 && dir != lastDir {
				sc.Oscillation++
			}
			lastDir = dir
		}
		prev = st.Replicas
		if st.Backlog > queueEpsilon {
			sc.BacklogTurns++
			sc.PeakBacklog = max(sc.PeakBacklog, st.Backlog)
		}
		sc.Total += st.Replicas
		sc.Excess += max(0, st.Replicas-st.Required)
		sc.Peak = max(sc.Peak, st.Replicas)
		inEvent := st.Turn >= s.EventStart && st.Turn < s.EventEnd
		if st.Ready < st.Required {
			sc.Shortfall++
			if inEvent {
				sc.JumpShortfall++
			}
		}
		if s.HasEvent() && st.Turn >= s.EventStart && sc.Reaction < 0 && st.Ready >= st.Required {
			sc.Reaction = st.Turn - s.EventStart
		}

		d, sup := float64(st.Required), float64(st.Ready)
		if sup < d {
			under += (d - sup) / d
			underTurns++
		} else if sup > d {
			over += (sup - d) / d
			overTurns++
		}
		if i > 0 {
			p := steps[i-1]
			ds, dd := cmp.Compare(st.Ready-p.Ready, 0), cmp.Compare(st.Required-p.Required, 0)
			if ds != dd {
				unstable++
			}
			if ds != 0 {
				adaptations++
			}
			if dd != 0 {
				demandChanges++
			}
		}
	}
	n := float64(len(steps))
	if n == 0 {
		return sc
	}
	sc.UnderAccuracy, sc.OverAccuracy = 100*under/n, 100*over/n
	sc.UnderTimeshare, sc.OverTimeshare = 100*float64(underTurns)/n, 100*float64(overTurns)/n
	if n > 1 {
		sc.Instability = 100 * float64(unstable) / (n - 1)
	}
	sc.Jitter = float64(adaptations-demandChanges) / (n * turn.Minutes())
	return sc
}
