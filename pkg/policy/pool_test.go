package policy

import (
	"strings"
	"testing"
)

func member(target string, replicas, inFlight, pending int, util float64) PoolMember {
	return PoolMember{Target: target, Observation: ElasticityObservation{Replicas: replicas, InFlight: inFlight, Pending: pending, Utilization: util}}
}

func TestPoolCombinesSignals(t *testing.T) {
	sig := combine([]PoolMember{member("a", 3, 1, 4, 1), member("b", 1, 0, 2, 0), member("c", 0, 2, 1, 0.7)})
	want := ElasticityObservation{Replicas: 4, InFlight: 3, Pending: 7, Utilization: 0.75}
	if sig != want {
		t.Errorf("combined %+v, want %+v (utilization weighted by replicas)", sig, want)
	}
	if sig := combine([]PoolMember{member("a", 0, 1, 1, 0.9)}); sig.Utilization != 0 {
		t.Errorf("no replicas: utilization %v, want 0", sig.Utilization)
	}
	// Net changes in flight add up; a member's current is never below 0.
	sig = combine([]PoolMember{member("a", 3, -1, 0, 0.5), member("b", 1, 2, 0, 0), member("c", 1, -3, 0, 0)})
	if want := (ElasticityObservation{Replicas: 5, InFlight: 0, Utilization: 0.3}); sig != want {
		t.Errorf("combined %+v, want %+v", sig, want)
	}
}

func TestPoolCountsChangesInFlight(t *testing.T) {
	p := newElastic(t, PolicyFullyElastic, nil)
	// a: 3 seen, 1 leaving; b: 1 seen, 1 starting. Current is 2 + 2.
	pd, _ := p.DecidePool("p", ElasticityState{}, []PoolMember{member("a", 3, -1, 1, 0.5), member("b", 1, 1, 1, 0.5)}, t0)
	if pd.Pool.Action != ScaleDown || pd.Pool.Before != 4 || pd.Pool.Desired != 3 || pd.Step != "a" {
		t.Fatalf("pool: %s %d -> %d on %q (%s)", pd.Pool.Action, pd.Pool.Before, pd.Pool.Desired, pd.Step, pd.Pool.Reason)
	}
	if !strings.Contains(pd.Pool.Reason, "; current 4, above target") { // -1 and +1 offset
		t.Errorf("pool reason %q", pd.Pool.Reason)
	}
	for i, want := range [][2]int{{2, 1}, {2, 2}} {
		if d := pd.Members[i].Decision; d.Before != want[0] || d.Desired != want[1] {
			t.Errorf("member %s: %d -> %d, want %d -> %d", pd.Members[i].Target, d.Before, d.Desired, want[0], want[1])
		}
	}
	// The pool is at its target while a's removal is in flight.
	pd, _ = p.DecidePool("p", ElasticityState{}, []PoolMember{member("a", 3, -2, 2, 0.5), member("b", 2, 0, 1, 0.5)}, t0)
	if pd.Pool.Action != NoOp || pd.Pool.Desired != 3 || pd.Members[0].Decision.Desired != 1 {
		t.Errorf("pool: %s -> %d, a -> %d (%s); want a no-op at 3, a at 1", pd.Pool.Action, pd.Pool.Desired, pd.Members[0].Decision.Desired, pd.Pool.Reason)
	}
}

func TestPoolTakesOneStep(t *testing.T) {
	p := newElastic(t, PolicyFullyElastic, nil)
	// Together the pool is 5 short, yet one replica is added, to the member
	// that needs it most.
	pd, _ := p.DecidePool("gpu", ElasticityState{}, []PoolMember{member("b", 1, 0, 1, 1), member("a", 1, 0, 6, 1)}, t0)
	if pd.Pool.Action != ScaleUp || pd.Pool.Before != 2 || pd.Pool.Desired != 3 || pd.Step != "a" {
		t.Fatalf("pool: %s %d -> %d on %q (%s)", pd.Pool.Action, pd.Pool.Before, pd.Pool.Desired, pd.Step, pd.Pool.Reason)
	}
	if !strings.HasSuffix(pd.Pool.Reason, "; pool gpu of 2 member(s), step on a") || pd.Pool.Inputs["pending"] != 7 {
		t.Errorf("pool reason %q inputs %v", pd.Pool.Reason, pd.Pool.Inputs)
	}
	want := []struct {
		target  string
		action  Action
		before  int
		desired int
	}{{"a", ScaleUp, 1, 2}, {"b", NoOp, 1, 1}}
	if len(pd.Members) != len(want) {
		t.Fatalf("members %+v", pd.Members)
	}
	for i, w := range want {
		m := pd.Members[i]
		if m.Target != w.target || m.Decision.Action != w.action || m.Decision.Before != w.before || m.Decision.Desired != w.desired || m.Decision.Reason != pd.Pool.Reason {
			t.Errorf("member %d: %s %s %d -> %d; want %s %s %d -> %d", i, m.Target, m.Decision.Action, m.Decision.Before, m.Decision.Desired, w.target, w.action, w.before, w.desired)
		}
	}
}

func TestPoolStepGoesWhereNeeded(t *testing.T) {
	tests := []struct {
		name    string
		policy  string
		members []PoolMember
		action  Action
		step    string
	}{
		{"up: largest deficit, in flight counted", PolicyFullyElastic,
			[]PoolMember{member("a", 1, 3, 5, 0), member("b", 1, 0, 3, 0)}, ScaleUp, "b"},
		{"up: a tie goes to the busier", PolicyFullyElastic,
			[]PoolMember{member("a", 1, 0, 3, 0.5), member("b", 1, 0, 3, 0.9)}, ScaleUp, "b"},
		{"up: then to the first by target", PolicyFullyElastic,
			[]PoolMember{member("b", 1, 0, 3, 0.5), member("a", 1, 0, 3, 0.5)}, ScaleUp, "a"},
		{"up without pending work: the smallest member", PolicyPoolWithThreshold,
			[]PoolMember{member("a", 4, 0, 0, 1), member("b", 1, 0, 0, 0)}, ScaleUp, "b"},
		{"up: removals in flight widen the deficit", PolicyFullyElastic,
			[]PoolMember{member("a", 2, 0, 2, 0), member("b", 2, -1, 2, 0)}, ScaleUp, "b"},
		{"down: largest surplus, removals in flight counted", PolicyFullyElastic,
			[]PoolMember{member("a", 3, -1, 0, 0.5), member("b", 3, 0, 0, 0.5)}, ScaleDown, "b"},
		{"down: a launch in flight needs no idle replica", PolicyFullyElastic,
			[]PoolMember{member("a", 3, 1, 0, 1), member("b", 5, 0, 0, 1)}, ScaleDown, "a"},
		{"down: largest surplus", PolicyFullyElastic,
			[]PoolMember{member("a", 3, 0, 0, 0.5), member("b", 2, 0, 1, 0)}, ScaleDown, "a"},
		{"down: only members with an idle replica", PolicyFullyElastic,
			[]PoolMember{member("a", 3, 0, 0, 0.5), member("b", 5, 0, 0, 1)}, ScaleDown, "a"},
		{"down: a tie goes to the least busy", PolicyFullyElastic,
			[]PoolMember{member("a", 3, 0, 0, 0.5), member("b", 3, 0, 0, 0.2)}, ScaleDown, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newElastic(t, tt.policy, nil)
			// Two ticks, so pool_with_threshold's counter is satisfied.
			pd, st := p.DecidePool("p", ElasticityState{}, tt.members, t0)
			if tt.policy == PolicyPoolWithThreshold {
				pd, _ = p.DecidePool("p", st, tt.members, at(1))
			}
			if pd.Pool.Action != tt.action || pd.Step != tt.step {
				t.Errorf("got %s on %q (%s), want %s on %q", pd.Pool.Action, pd.Step, pd.Pool.Reason, tt.action, tt.step)
			}
		})
	}
}

func TestPoolThresholdUsesPoolUtilization(t *testing.T) {
	p := newElastic(t, PolicyPoolWithThreshold, nil)
	members := []PoolMember{member("a", 3, 0, 0, 1), member("b", 1, 0, 0, 0)} // 0.75: dead band
	var st ElasticityState
	for i := range 3 {
		var pd PoolDecision
		pd, st = p.DecidePool("p", st, members, at(float64(i)))
		if pd.Pool.Action != NoOp || !strings.Contains(pd.Pool.Reason, "utilization 0.75 in the dead band") {
			t.Fatalf("tick %d: %s (%s)", i, pd.Pool.Action, pd.Pool.Reason)
		}
	}
	members[0] = member("a", 4, 0, 0, 1) // 0.8
	pd, st := p.DecidePool("p", st, members, at(3))
	if pd.Pool.Action != NoOp || st.ConsecutiveAbove != 1 {
		t.Fatalf("first tick above: %s, counter %d", pd.Pool.Action, st.ConsecutiveAbove)
	}
	pd, st = p.DecidePool("p", st, members, at(4))
	if pd.Pool.Action != ScaleUp || st.ConsecutiveAbove != 0 {
		t.Errorf("second tick above: %s, counter %d; want scale_up and a reset", pd.Pool.Action, st.ConsecutiveAbove)
	}
}

func TestPoolWithNoIdleReplicaDowngrades(t *testing.T) {
	p := newElastic(t, PolicyFullyElastic, nil)
	pd, _ := p.DecidePool("p", ElasticityState{}, []PoolMember{member("a", 2, 0, 0, 1), member("b", 1, 0, 0, 1)}, t0)
	if pd.Pool.Action != NoOp || pd.Pool.Desired != 3 || pd.Step != "" || !strings.Contains(pd.Pool.Reason, "downgraded to no-op: no idle replica to remove") {
		t.Errorf("got %s -> %d on %q (%s)", pd.Pool.Action, pd.Pool.Desired, pd.Step, pd.Pool.Reason)
	}
	for _, m := range pd.Members {
		if m.Decision.Action != NoOp || m.Decision.Desired != m.Decision.Before {
			t.Errorf("member %s: %s", m.Target, m.Decision.Action)
		}
	}
}

func TestPoolNoOps(t *testing.T) {
	pd, st := newElastic(t, PolicyFullyElastic, nil).DecidePool("empty", ElasticityState{ConsecutiveAbove: 1}, nil, t0)
	if pd.Pool.Action != NoOp || pd.Pool.Reason != "pool empty has no members: no-op" || pd.Members != nil || st.ConsecutiveAbove != 1 {
		t.Errorf("empty pool: %+v", pd)
	}
	pd, _ = newElastic(t, PolicyFixed, nil).DecidePool("p", ElasticityState{}, []PoolMember{member("a", 1, 0, 9, 1)}, t0)
	if pd.Pool.Action != NoOp || pd.Pool.Reason != "fixed: no-op; pool p of 1 member(s)" {
		t.Errorf("fixed pool: %s (%q)", pd.Pool.Action, pd.Pool.Reason)
	}
}
