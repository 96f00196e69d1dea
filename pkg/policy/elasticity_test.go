package policy

import (
	"math"
	"strings"
	"testing"
)

// declared is the elasticity policy a kind declares, at its defaults.
func declared(t *testing.T, policy string) *ElasticityPolicy {
	t.Helper()
	k, ok := KindNamed(policy)
	if !ok {
		t.Fatalf("no policy %q", policy)
	}
	spec, err := k.FromMetadata(nil)
	if err != nil {
		t.Fatal(err)
	}
	return spec.(elasticSpec).p
}

// newElastic is the policy at its defaults with mutate applied.
func newElastic(t *testing.T, policy string, mutate func(*ElasticityOptions)) *ElasticityPolicy {
	t.Helper()
	d := declared(t, policy)
	o := d.opts
	if mutate != nil {
		mutate(&o)
	}
	p, err := newElasticityPolicy(o, d.rule)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFixedIsANoOp(t *testing.T) {
	obs := ElasticityObservation{Replicas: 3, InFlight: 1, Pending: 50, Utilization: 1}
	for _, tt := range []struct{ policy, reason string }{
		{PolicyFixed, "fixed: no-op"},
	} {
		d, st := newElastic(t, tt.policy, nil).Decide(ElasticityState{}, obs, t0)
		if d.Action != NoOp || d.Reason != tt.reason || d.Before != 4 || d.Desired != 4 || d.Policy != tt.policy || st != (ElasticityState{}) {
			t.Errorf("%q: got %+v, want a no-op with reason %q", tt.policy, d, tt.reason)
		}
	}
}

func TestElasticTarget(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		min, max int // max -1: the policy's default
		obs      ElasticityObservation
		target   int
		action   Action
		desired  int
	}{
		{"fully_elastic: below target scales up one", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 2, Pending: 5}, 5, ScaleUp, 3},
		{"fully_elastic: max defaults to unbounded", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 2, Pending: 1000}, 1000, ScaleUp, 3},
		{"in flight counts toward the target", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 2, InFlight: 3, Pending: 5}, 5, NoOp, 5},
		{"one step per tick whatever the gap", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 2, InFlight: 2, Pending: 5}, 5, ScaleUp, 5},
		{"max caps the target", PolicyFullyElastic, 0, 10, ElasticityObservation{Replicas: 10, Pending: 100}, 10, NoOp, 10},
		{"min floors the target", PolicyFullyElastic, 2, -1, ElasticityObservation{Replicas: 1}, 2, ScaleUp, 2},
		{"above target scales down one", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 4, Pending: 1}, 1, ScaleDown, 3},
		{"at min it holds", PolicyFullyElastic, 2, -1, ElasticityObservation{Replicas: 2}, 2, NoOp, 2},
		{"a scale-down counts launches in flight", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 4, InFlight: 1, Pending: 2}, 2, ScaleDown, 4},
		{"a launch no longer needed is taken back", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 2, InFlight: 1, Pending: 2}, 2, ScaleDown, 2},
		{"a replica leaving is not asked back", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 3, InFlight: -1, Pending: 2}, 2, NoOp, 2},
		{"a scale-down in flight counts toward the target", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 4, InFlight: -1, Pending: 2}, 2, ScaleDown, 2},
		{"below target after the removals scales up", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 3, InFlight: -2, Pending: 2}, 2, ScaleUp, 2},
		{"current is never negative", PolicyFullyElastic, 0, -1, ElasticityObservation{Replicas: 1, InFlight: -3}, 0, NoOp, 0},
		{"at min with a removal in flight it holds", PolicyFullyElastic, 2, -1, ElasticityObservation{Replicas: 3, InFlight: -1}, 2, NoOp, 2},
		{"max_count: unset max scales nothing up", PolicyMaxCount, 0, -1, ElasticityObservation{Replicas: 0, Pending: 5}, 0, NoOp, 0},
		{"max_count: unset max scales down", PolicyMaxCount, 0, -1, ElasticityObservation{Replicas: 2, Pending: 5}, 0, ScaleDown, 1},
		{"max_count: with a max", PolicyMaxCount, 0, 3, ElasticityObservation{Replicas: 1, Pending: 5}, 3, ScaleUp, 2},
		{"max_count: min above the unset max wins", PolicyMaxCount, 1, -1, ElasticityObservation{Pending: 5}, 1, ScaleUp, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newElastic(t, tt.policy, func(o *ElasticityOptions) {
				o.Min = tt.min
				if tt.max >= 0 {
					o.Max = tt.max
				}
			})
			d, _ := p.Decide(ElasticityState{}, tt.obs, t0)
			if d.Action != tt.action || d.Desired != tt.desired || d.Inputs["target"] != float64(tt.target) {
				t.Errorf("got %s -> %d target %v (%s); want %s -> %d target %d",
					d.Action, d.Desired, d.Inputs["target"], d.Reason, tt.action, tt.desired, tt.target)
			}
		})
	}
}

func TestElasticReasons(t *testing.T) {
	p := newElastic(t, PolicyFullyElastic, nil)
	d, _ := p.Decide(ElasticityState{}, ElasticityObservation{Replicas: 2, Pending: 5}, t0)
	if want := "fully_elastic: target 5 = max(min(pending 5, max unbounded), min 0); current 2, below target: scale_up"; d.Reason != want {
		t.Errorf("reason\n got %q\nwant %q", d.Reason, want)
	}
	d, _ = newElastic(t, PolicyMaxCount, nil).Decide(ElasticityState{}, ElasticityObservation{Pending: 5}, t0)
	if want := "max_count: target 0 = max(min(pending 5, max 0), min 0); current 0, at target: no-op"; d.Reason != want {
		t.Errorf("reason\n got %q\nwant %q", d.Reason, want)
	}
	for _, tt := range []struct {
		obs  ElasticityObservation
		want string
	}{
		{ElasticityObservation{Replicas: 2, InFlight: 2, Pending: 5}, "; current 4 = 2 seen +2 in flight, below target: scale_up"},
		{ElasticityObservation{Replicas: 5, InFlight: -1, Pending: 4}, "; current 4 = 5 seen -1 leaving, at target: no-op"},
		{ElasticityObservation{Replicas: 5, InFlight: -1, Pending: 3}, "; current 4 = 5 seen -1 leaving, above target: scale_down"},
	} {
		if d, _ := p.Decide(ElasticityState{}, tt.obs, t0); !strings.HasSuffix(d.Reason, tt.want) {
			t.Errorf("%+v: reason %q, want it to end %q", tt.obs, d.Reason, tt.want)
		}
	}
}

func TestBusyReplicasAreNeverRemoved(t *testing.T) {
	p := newElastic(t, PolicyFullyElastic, nil)
	d, _ := p.Decide(ElasticityState{}, ElasticityObservation{Replicas: 4, Pending: 1, Utilization: 1}, t0)
	if d.Action != NoOp || d.Desired != 4 || !strings.HasSuffix(d.Reason, "scale_down; downgraded to no-op: no idle replica to remove") {
		t.Errorf("got %s -> %d (%q); want a downgraded no-op", d.Action, d.Desired, d.Reason)
	}
	// A launch in flight is taken back first, which needs no idle replica.
	d, _ = p.Decide(ElasticityState{}, ElasticityObservation{Replicas: 4, InFlight: 1, Pending: 1, Utilization: 1}, t0)
	if d.Action != ScaleDown || d.Before != 5 || d.Desired != 4 {
		t.Errorf("got %s %d -> %d (%q); want scale_down 5 -> 4", d.Action, d.Before, d.Desired, d.Reason)
	}
}

func TestPoolWithThresholdHysteresis(t *testing.T) {
	p := newElastic(t, PolicyPoolWithThreshold, func(o *ElasticityOptions) { o.Min, o.Max = 1, 3 })
	steps := []struct {
		util               float64
		replicas, inFlight int
		action             Action
		above, below       int
		reason             string
	}{
		{0.9, 1, 0, NoOp, 1, 0, "utilization 0.90 >= high 0.80 for 1 of 2 ticks: no-op"},
		{0.8, 1, 0, ScaleUp, 0, 0, "utilization 0.80 >= high 0.80 for 2 ticks: scale_up"}, // counter reset by the decision
		{0.9, 1, 1, NoOp, 1, 0, "for 1 of 2 ticks"},                                       // two more ticks needed
		{0.9, 2, 0, ScaleUp, 0, 0, "scale_up"},
		{0.95, 3, 0, NoOp, 1, 0, "for 1 of 2 ticks"},
		{0.95, 3, 0, NoOp, 2, 0, "for 2 ticks, at max 3 (current 3): no-op"}, // the bound keeps the counter
		{0.95, 3, 0, NoOp, 3, 0, "at max 3"},
		{0.95, 2, 1, NoOp, 4, 0, "at max 3 (current 3 = 2 seen +1 in flight)"},
		{0.95, 2, 0, ScaleUp, 0, 0, "for 5 ticks: scale_up"}, // kept counter: no wait once the bound allows
		{0.5, 3, 0, NoOp, 0, 0, "utilization 0.50 in the dead band (0.30, 0.80): no-op"},
		{0.3, 3, 0, NoOp, 0, 1, "utilization 0.30 <= low 0.30 for 1 of 2 ticks: no-op"},
		{0.5, 3, 0, NoOp, 0, 0, "dead band"}, // the dead band resets both
		{0.1, 3, 0, NoOp, 0, 1, "for 1 of 2 ticks"},
		{0.1, 3, 0, ScaleDown, 0, 0, "<= low 0.30 for 2 ticks: scale_down"},
		{0.85, 2, 0, NoOp, 1, 0, ">= high"},
		{0.2, 2, 0, NoOp, 0, 1, "<= low"}, // crossing resets the other counter
		{0.2, 1, 0, NoOp, 0, 2, "<= low 0.30 for 2 ticks, at min 1 (current 1): no-op"},
		{0.2, 2, -1, NoOp, 0, 3, "at min 1 (current 1 = 2 seen -1 leaving)"}, // a removal in flight counts
		{0.2, 2, 0, ScaleDown, 0, 0, "for 4 ticks: scale_down"},
		{0.9, 3, 0, NoOp, 1, 0, ">= high 0.80 for 1 of 2 ticks"},
		{0.9, 3, 0, NoOp, 2, 0, "at max 3 (current 3)"},
		{0.9, 3, -1, ScaleUp, 0, 0, "for 3 ticks: scale_up"}, // current 2 is below max 3
	}
	var st ElasticityState
	for i, s := range steps {
		var d Decision
		d, st = p.Decide(st, ElasticityObservation{Replicas: s.replicas, InFlight: s.inFlight, Utilization: s.util}, at(float64(i)))
		if d.Action != s.action || st.ConsecutiveAbove != s.above || st.ConsecutiveBelow != s.below || !strings.Contains(d.Reason, s.reason) {
			t.Errorf("tick %d: %s above %d below %d (%q); want %s above %d below %d with %q",
				i, d.Action, st.ConsecutiveAbove, st.ConsecutiveBelow, d.Reason, s.action, s.above, s.below, s.reason)
		}
	}
}

func TestPoolWithThresholdOptions(t *testing.T) {
	p := newElastic(t, PolicyPoolWithThreshold, func(o *ElasticityOptions) { o.High, o.Low, o.Ticks = 0.6, 0.2, 1 })
	d, st := p.Decide(ElasticityState{}, ElasticityObservation{Replicas: 1, Utilization: 0.6}, t0)
	if d.Action != ScaleUp || st.ConsecutiveAbove != 0 {
		t.Errorf("one tick at high 0.6: got %s (%q)", d.Action, d.Reason)
	}
	if d, _ := p.Decide(ElasticityState{}, ElasticityObservation{Replicas: 2, Utilization: 0.2}, t0); d.Action != ScaleDown {
		t.Errorf("one tick at low 0.2: got %s (%q)", d.Action, d.Reason)
	}
}

func TestElasticityOptions(t *testing.T) {
	for _, k := range Kinds() {
		if _, err := k.FromMetadata(nil); err != nil {
			t.Errorf("%s defaults: %v", k.Name, err)
		}
	}
	if got := declared(t, PolicyFullyElastic).opts.Max; got != Unbounded {
		t.Errorf("fully_elastic max = %d, want unbounded", got)
	}
	if got := declared(t, PolicyMaxCount).opts.Max; got != 0 {
		t.Errorf("max_count max = %d, want 0", got)
	}
	tests := []struct {
		field  string
		mutate func(*ElasticityOptions)
	}{
		{"Min", func(o *ElasticityOptions) { o.Min = -1 }},
		{"Max", func(o *ElasticityOptions) { o.Max = -1 }},
		{"Low", func(o *ElasticityOptions) { o.Low = -0.1 }},
		{"Low", func(o *ElasticityOptions) { o.Low = 0.9 }},
		{"High", func(o *ElasticityOptions) { o.High = 0 }},
		{"High", func(o *ElasticityOptions) { o.High = 1.2 }},
		{"Ticks", func(o *ElasticityOptions) { o.Ticks = 0 }},
	}
	for _, tt := range tests {
		o := declared(t, PolicyPoolWithThreshold).opts
		tt.mutate(&o)
		wantField(t, o.Validate(), tt.field)
		if _, err := newElasticityPolicy(o, thresholdRule); err == nil {
			t.Errorf("newElasticityPolicy accepted an invalid %s", tt.field)
		}
	}
}

// Utilization is a fraction: NaN and negatives read as 0, anything above 1
// as 1, so no input is non-finite and NaN does not sit in the dead band.
func TestUtilizationIsAFraction(t *testing.T) {
	p := newElastic(t, PolicyPoolWithThreshold, func(o *ElasticityOptions) { o.Ticks = 1 })
	for _, c := range []struct {
		u, want float64
		action  Action
	}{{math.NaN(), 0, ScaleDown}, {-1, 0, ScaleDown}, {math.Inf(1), 1, ScaleUp}, {2, 1, ScaleUp}} {
		d, _ := p.Decide(ElasticityState{}, ElasticityObservation{Replicas: 2, Utilization: c.u}, t0)
		if d.Inputs["utilization"] != c.want || d.Action != c.action {
			t.Errorf("utilization %v: input %v, %s; want %v, %s", c.u, d.Inputs["utilization"], d.Action, c.want, c.action)
		}
		pd, _ := p.DecidePool("p", ElasticityState{}, []PoolMember{{Target: "a", Observation: ElasticityObservation{Replicas: 2, Utilization: c.u}}}, t0)
		if got := pd.Pool.Inputs["utilization"]; got != c.want {
			t.Errorf("pool with utilization %v: input %v, want %v", c.u, got, c.want)
		}
	}
	o := declared(t, PolicyFullyElastic).opts
	o.SlotsPerReplica = -1
	wantField(t, o.Validate(), "SlotsPerReplica")
}
