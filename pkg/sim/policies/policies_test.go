package policies

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
	"github.com/barometer-scaler/barometer/pkg/sim"
)

func TestQueueObservation(t *testing.T) {
	tests := []struct {
		name string
		in   sim.Reading
		want policy.QueueObservation
	}{
		{"counters pass through, gauges round up",
			sim.Reading{Replicas: 3, Queue: sim.QueueSample{Arrivals: 120.5, Runs: 100, RunSeconds: 210, Backlog: 20.2, Busy: 2.1, Offered: 9}},
			policy.QueueObservation{Arrivals: 120.5, Runs: 100, RunSeconds: 210,
				Backlog: []policy.ClassBacklog{{Class: "default", Ready: 21}}, Busy: 3}},
		{"float noise does not add an item",
			sim.Reading{Replicas: 2, Queue: sim.QueueSample{Backlog: 4 + 1e-12, Busy: 2 + 1e-12}},
			policy.QueueObservation{Backlog: []policy.ClassBacklog{{Class: "default", Ready: 4}}, Busy: 2}},
		{"empty queue",
			sim.Reading{Replicas: 1},
			policy.QueueObservation{Backlog: []policy.ClassBacklog{{Class: "default"}}}},
	}
	for _, tt := range tests {
		if got := Observation(sim.ReferenceModel(), tt.in); got.Replicas != tt.in.Replicas || !reflect.DeepEqual(got.Queue, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// The elasticity policies read pending work in replica-sized items and the
// busy work over the replicas seen (pkg/policy turns it into utilization).
func TestElasticityObservation(t *testing.T) {
	m := sim.ReferenceModel() // 1176.47 requests/s per replica at 70 %: 823.529 per item
	tests := []struct {
		name string
		in   sim.Reading
		want policy.Observation
	}{
		{"pending is replica-sized items of offered load",
			sim.Reading{Replicas: 4, Queue: sim.QueueSample{Offered: 2000, Busy: 1.7}},
			policy.Observation{Replicas: 4, Pending: 3, Busy: 1.7, Answered: 4}},
		{"exactly one item",
			sim.Reading{Replicas: 1, Queue: sim.QueueSample{Offered: 1176.47 * 0.7, Busy: 0.7}},
			policy.Observation{Replicas: 1, Pending: 1, Busy: 0.7, Answered: 1}},
		{"no load, no pending",
			sim.Reading{Replicas: 2},
			policy.Observation{Replicas: 2, Answered: 2}},
		{"no replica seen",
			sim.Reading{Queue: sim.QueueSample{Offered: 100}},
			policy.Observation{Pending: 1}},
	}
	for _, tt := range tests {
		got := Observation(m, tt.in)
		got.Queue = policy.QueueObservation{}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestPendingIsTheRequiredRule: on a load series pending is the required
// replicas without the floor, turn for turn.
func TestPendingIsTheRequiredRule(t *testing.T) {
	m := sim.ReferenceModel()
	for _, s := range []sim.Series{sim.Reference(), sim.JumpTest(), sim.FlashCrowd(7)} {
		for turn, load := range s.Load {
			if got, want := max(m.MinReplicas, Pending(m, load)), m.Required(load); got != want {
				t.Errorf("%s turn %d: pending %d, required %d", s.Name, turn, got, want)
			}
		}
	}
}

// spy records each decision with the state it was made in.
type spy struct {
	c      *Controller
	states []sim.State
	ds     []policy.Decision
}

func (s *spy) Decide(st sim.State) int {
	n := s.c.Decide(st)
	s.states, s.ds = append(s.states, st), append(s.ds, s.c.Last())
	return n
}

func run(t *testing.T, set sim.Setting, m sim.Model, s sim.Series, cfg sim.Config) (*spy, sim.Result) {
	t.Helper()
	cfg.Model = m
	sp := &spy{c: set.New(m).(*Controller)}
	return sp, sim.Run(cfg, s, sp)
}

func setting(t *testing.T, name string, m sim.Model, w Wiring) sim.Setting {
	t.Helper()
	k, ok := policy.KindNamed(name)
	if !ok {
		t.Fatalf("no policy %s", name)
	}
	s, err := DefaultSetting(k, m, w)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEachPolicyDecides: every setting drives pkg/policy's own rule, and
// the count published is the decision's.
func TestEachPolicyDecides(t *testing.T) {
	m := sim.ReferenceModel()
	sets := Settings(m, DefaultWiring())
	if got := len(sets); got != len(policy.Kinds()) {
		t.Fatalf("%d settings, want %d", got, len(policy.Kinds()))
	}
	for i, set := range sets {
		name := policy.Kinds()[i].Name
		sp, res := run(t, set, m, sim.Reference(), sim.Config{Delay: 1})
		for turn, d := range sp.ds {
			if d.Policy != name || !strings.HasPrefix(d.Reason, name+":") {
				t.Fatalf("%s turn %d: policy %q reason %q", set.Name, turn, d.Policy, d.Reason)
			}
			if got := res.Steps[turn].Replicas; got != m.Clamp(d.Desired) {
				t.Fatalf("%s turn %d: %d replicas, decision %d", set.Name, turn, got, d.Desired)
			}
			if !d.At.Equal(sp.states[turn].Reading.At) {
				t.Fatalf("%s turn %d: decided at %v, want the sample's time %v", set.Name, turn, d.At, sp.states[turn].Reading.At)
			}
		}
	}
}

// TestReplicasSeen: the engine's wiring sees the sample's replicas; the
// comparison wiring the replicas ready at the decision.
func TestReplicasSeen(t *testing.T) {
	m := sim.ReferenceModel()
	for _, current := range []bool{false, true} {
		w := DefaultWiring()
		w.CurrentReplicas = current
		sp, _ := run(t, setting(t, policy.PolicyFullyElastic, m, w), m, sim.Reference(), sim.Config{Delay: 3})
		for turn, d := range sp.ds {
			want := sp.states[turn].Reading.Replicas
			if current {
				want = sp.states[turn].Ready
			}
			if got := int(d.Inputs["replicas"]); got != want {
				t.Fatalf("current %v, turn %d: saw %d replicas, want %d", current, turn, got, want)
			}
		}
	}
}

// TestRepeatedSamplesAddNoTime: until the pipeline fills, the loop repeats
// the first sample; at the sample's time it adds no elapsed time, so the
// first measured rate is the first real interval's, not a turn without
// arrivals.
func TestRepeatedSamplesAddNoTime(t *testing.T) {
	m := sim.ReferenceModel()
	s := sim.Reference()
	sp, _ := run(t, setting(t, policy.PolicyQueue, m, DefaultWiring()), m, s, sim.Config{Delay: 3})
	for turn := range 4 {
		if got := sp.ds[turn].Inputs["arrival_rate"]; got != 0 {
			t.Errorf("turn %d: rate %v before two distinct samples, want 0", turn, got)
		}
	}
	// Turn 4 reads sample 1: the first rate is turn 1's load, in requests/s.
	if got := sp.ds[4].Inputs["arrival_rate"]; got < s.Load[1]-1e-6 || got > s.Load[1]+1e-6 {
		t.Errorf("turn 4: rate %v, want turn 1's load %v", got, s.Load[1])
	}
}

// TestLaunchesInFlight: while replicas start, the tracker's tokens count
// as in flight. A TTL that covers the start lets fully_elastic take one
// step per turn; with the default (one turn) each token expires first, so
// the policy asks again for the visible count plus one.
func TestLaunchesInFlight(t *testing.T) {
	m := sim.ReferenceModel()
	tests := []struct {
		ttl  time.Duration
		want []int // provisioned replicas in turns 59..67 (load jumps at 60)
	}{
		{time.Minute, []int{1, 2, 3, 4, 4, 4, 4, 4, 4}},
		{ledger.DefaultLaunchTTL, []int{1, 2, 2, 2, 3, 3, 3, 4, 4}},
	}
	for _, tt := range tests {
		w := DefaultWiring()
		w.Launch.TTL = tt.ttl
		sp, res := run(t, setting(t, policy.PolicyFullyElastic, m, w), m, sim.JumpTest(), sim.Config{StartupTurns: 3})
		var got []int
		for _, st := range res.Steps[59:68] {
			got = append(got, st.Replicas)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("TTL %s: replicas %v, want %v", tt.ttl, got, tt.want)
		}
		if tt.ttl == time.Minute && sp.ds[61].Inputs["in_flight"] != 1 {
			t.Errorf("TTL %s: turn 61 in flight %v, want 1", tt.ttl, sp.ds[61].Inputs["in_flight"])
		}
	}
}

// TestFixedAndMaxCount: fixed keeps its count, and max_count with a
// maximum runs exactly as fully_elastic.
func TestFixedAndMaxCount(t *testing.T) {
	m := sim.ReferenceModel()
	for d := range 7 {
		cfg := sim.Config{Delay: d}
		_, fixed := run(t, setting(t, policy.PolicyFixed, m, DefaultWiring()), m, sim.Reference(), cfg)
		for _, st := range fixed.Steps {
			if st.Replicas != m.InitialReplicas {
				t.Fatalf("delay %d: fixed changed to %d replicas", d, st.Replicas)
			}
		}
		_, elastic := run(t, setting(t, policy.PolicyFullyElastic, m, DefaultWiring()), m, sim.Reference(), cfg)
		_, capped := run(t, setting(t, policy.PolicyMaxCount, m, DefaultWiring()), m, sim.Reference(), cfg)
		if !reflect.DeepEqual(elastic.Steps, capped.Steps) {
			t.Errorf("delay %d: max_count (max %d) differs from fully_elastic", d, m.MaxReplicas)
		}
	}
}

func TestSettingsRejectInvalidOptions(t *testing.T) {
	m := sim.ReferenceModel()
	spec := func(k policy.Kind, kv ...string) policy.Spec {
		raw := ModelKeys(k, m)
		for i := 0; i+1 < len(kv); i += 2 {
			raw[kv[i]] = kv[i+1]
		}
		s, err := k.FromMetadata(raw)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := policy.Queue.FromMetadata(map[string]string{"drainTime": "0s"}); err == nil {
		t.Error("queue drain time 0s accepted")
	}
	if _, err := policy.PoolWithThreshold.FromMetadata(map[string]string{"threshold": "1.5"}); err == nil {
		t.Error("threshold 1.5 accepted")
	}
	noTTL := Wiring{}
	for name, err := range map[string]error{
		"launch TTL":            second(Setting("q", spec(policy.Queue), noTTL)),
		"elasticity launch TTL": second(Setting("p", spec(policy.Fixed), noTTL)),
	} {
		var oe *policy.OptionError
		if !errors.As(err, &oe) || oe.Field != "TTL" {
			t.Errorf("%s: err = %v, want an option error on TTL", name, err)
		}
	}
}

func second(_ sim.Setting, err error) error { return err }

// TestDefaultsAtTheModel: the policies aim at the model's occupancy within
// its bounds; everything else is pkg/policy's documented default.
func TestDefaultsAtTheModel(t *testing.T) {
	m := sim.Model{Saturation: 1, Target: 0.6, MinReplicas: 2, MaxReplicas: 9, InitialReplicas: 3}
	if got, want := ModelKeys(policy.Queue, m), map[string]string{"minReplicas": "2", "maxReplicas": "9", "targetUtilization": "0.6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("queue keys %v, want %v", got, want)
	}
	for _, k := range []policy.Kind{policy.FullyElastic, policy.MaxCount, policy.PoolWithThreshold} {
		if got, want := ModelKeys(k, m), map[string]string{"minReplicas": "2", "maxReplicas": "9"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s keys %v, want %v", k.Name, got, want)
		}
	}
	if got := ModelKeys(policy.Fixed, m); len(got) != 0 {
		t.Errorf("fixed reads no bounds, got %v", got)
	}
}

// TestNoOpKeepsTheLastCount: with a launchTTL that covers the metric delay
// (the decision's turn, the turn the change is measured in and the delay),
// the tracker counts every change not yet in the sample, launches and
// removals alike, so a no-op publishes the count the last decision asked
// for. With the default TTL (one turn) the tokens expire first, and a no-op
// gives a scale-down back.
func TestNoOpKeepsTheLastCount(t *testing.T) {
	const delay = 3
	qm := sim.QueueModel()
	series := []struct {
		m sim.Model
		s sim.Series
	}{{sim.ReferenceModel(), sim.Reference()}, {qm, sim.ReferenceQueue().Series(qm, sim.DefaultTurn)}}
	covering := DefaultWiring()
	covering.Launch.TTL = (delay + 2) * sim.DefaultTurn
	for _, name := range []string{policy.PolicyQueue, policy.PolicyFullyElastic, policy.PolicyPoolWithThreshold} {
		for _, w := range []Wiring{covering, DefaultWiring()} {
			given := 0
			for _, sr := range series {
				sp, res := run(t, setting(t, name, sr.m, w), sr.m, sr.s, sim.Config{Delay: delay})
				for turn := 1; turn < len(sp.ds); turn++ {
					if d := sp.ds[turn]; d.Action == policy.NoOp && d.Desired != res.Steps[turn-1].Replicas {
						given++
					}
				}
			}
			if long := w.Launch.TTL > ledger.DefaultLaunchTTL; long != (given == 0) {
				t.Errorf("%s, launchTTL %s: %d no-op(s) changed the count", name, w.Launch.TTL, given)
			}
		}
	}
}
