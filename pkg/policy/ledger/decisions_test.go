package ledger

import (
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/policy"
)

// decider is kind's decider at its defaults, as pkg/decide builds it.
func decider(t *testing.T, kind policy.Kind) policy.Decider {
	t.Helper()
	spec, err := kind.FromMetadata(nil)
	if err != nil {
		t.Fatal(err)
	}
	return spec.New()
}

func gauge(n int) []policy.Reservation { return []policy.Reservation{{Slots: n}} }

func TestDecisionsFeedTheTracker(t *testing.T) {
	lt := newTracker(t)
	q := decider(t, policy.Queue)
	obs := policy.Observation{Replicas: 2, Queue: policy.QueueObservation{Reservations: gauge(6)}}
	obs.InFlight = lt.Observe("q", obs.Replicas, t0)
	d := q.Decide(obs, t0)
	lt.Record("q", d)
	// Nothing has started yet: the 4 asked for are in flight, not asked again.
	obs.InFlight = lt.Observe("q", obs.Replicas, at(5))
	if d = q.Decide(obs, at(5)); obs.InFlight != 4 || d.Action != policy.NoOp || d.Desired != 6 {
		t.Errorf("in flight %d, %s -> %d; want 4 in flight and a no-op at 6", obs.InFlight, d.Action, d.Desired)
	}
}

// While a scale-down is not yet seen, a no-op publishes the count it asked
// for, not the stale one: the next sample still shows the leaving replicas.
func TestNoOpKeepsAScaleDownInFlight(t *testing.T) {
	lt := newTracker(t)
	p := decider(t, policy.FullyElastic)
	steps := []struct {
		at              float64
		visible         int
		action          policy.Action
		before, desired int
		reason          string
	}{
		{0, 4, policy.ScaleDown, 4, 3, "current 4, above target"},
		{5, 4, policy.ScaleDown, 3, 2, "current 3 = 4 seen -1 leaving, above target"},
		{10, 4, policy.NoOp, 2, 2, "current 2 = 4 seen -2 leaving, at target: no-op"},
		{12, 3, policy.NoOp, 2, 2, "current 2 = 3 seen -1 leaving"},
		{14, 2, policy.NoOp, 2, 2, "current 2, at target"},
	}
	for _, s := range steps {
		obs := policy.Observation{Replicas: s.visible, Pending: 2, Busy: 0.5 * float64(s.visible), Answered: s.visible}
		obs.InFlight = lt.Observe("w", s.visible, at(s.at))
		d := p.Decide(obs, at(s.at))
		lt.Record("w", d)
		if d.Action != s.action || d.Before != s.before || d.Desired != s.desired || !strings.Contains(d.Reason, s.reason) {
			t.Errorf("at %vs: %s %d -> %d (%q); want %s %d -> %d with %q", s.at, d.Action, d.Before, d.Desired, d.Reason,
				s.action, s.before, s.desired, s.reason)
		}
	}

	// The queue policy alike: its cooldown no-op keeps the scale-down.
	lt = newTracker(t)
	q := decider(t, policy.Queue)
	for _, s := range []struct {
		at      float64
		visible int
		action  policy.Action
		desired int
	}{{0, 10, policy.NoOp, 10}, {60, 10, policy.ScaleDown, 9}, {70, 10, policy.NoOp, 9}, {72, 9, policy.NoOp, 9}} {
		obs := policy.Observation{Replicas: s.visible, Queue: policy.QueueObservation{Reservations: gauge(2)}}
		obs.InFlight = lt.Observe("q", s.visible, at(s.at))
		d := q.Decide(obs, at(s.at))
		lt.Record("q", d)
		if d.Action != s.action || d.Desired != s.desired || (s.at == 70 && !strings.Contains(d.Reason, "; current 9 = 10 seen -1 leaving; no-op: scale-down cooldown")) {
			t.Errorf("queue at %vs: %s -> %d (%q); want %s -> %d", s.at, d.Action, d.Desired, d.Reason, s.action, s.desired)
		}
	}
}
