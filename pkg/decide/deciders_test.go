package decide

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// Every pressure sample is a decision: the recommendation against the
// previous sample's (the warming-up signal's before the first), with the
// signal's own reason; cost integrates the replicas the source saw.
func TestPressureSamplesAreDecisions(t *testing.T) {
	e := NewEngine(Config{})
	s := spec(signal.PolicyPressure)
	s["costPerReplicaSecond"] = "0.5"
	r := newRunner(t, e, "web", s)
	if w := r.WarmingUp(); w.Policy != signal.PolicyPressure || w.Reason != signal.ReasonWarmingUp {
		t.Fatalf("warming up: %+v", w)
	}
	samples := []struct {
		sec      float64
		visible  int
		cpu      float64
		want     step
		reasonIn string
	}{
		{0, 2, 0.6, step{policy.ScaleUp, 0, 2}, "resource pressure 0.60 across 2 replica(s)"},
		{5, 2, 0.6, step{policy.NoOp, 2, 2}, "across 2"},
		{10, 3, 0.9, step{policy.ScaleUp, 2, 3}, "resource pressure 0.90 across 3"},
		{15, 3, 0.1, step{policy.NoOp, 3, 3}, "held by safety gate"}, // the gate's arming tick
		{20, 3, 0.1, step{policy.ScaleDown, 3, 1}, "resource pressure 0.10 across 3"},
	}
	var sig signal.ScalingSignal
	for _, c := range samples {
		sig = decideAt(t, r, at(c.sec), sample(c.visible, c.cpu, nil))
		if sig.Policy != signal.PolicyPressure || sig.Action != string(c.want.action) || sig.RecommendedReplicas != c.want.after ||
			!strings.Contains(sig.Reason, c.reasonIn) {
			t.Errorf("at %gs: policy %q action %q replicas %d reason %q; want %s to %d, reason with %q",
				c.sec, sig.Policy, sig.Action, sig.RecommendedReplicas, sig.Reason, c.want.action, c.want.after, c.reasonIn)
		}
	}
	// The no-op at 5 s reads as the scale-up before it but for its
	// numbers: it is counted into it.
	ev := e.Events("web")
	want := []step{}
	for _, c := range samples {
		want = append(want, c.want)
	}
	if got := steps(ev); !slices.Equal(got, want) || len(ev) != 4 || ev[0].Repeats != 1 || !ev[0].LastTime.Equal(at(5)) {
		t.Errorf("events %v (%d entries), want %v, the no-op at 5 s counted into the first", got, len(ev), want)
	}
	if ev[3].Reason != sig.Reason || ev[3].Target != "web" || ev[3].Policy != "pressure" || !ev[3].Time.Equal(at(20)) {
		t.Errorf("last event %+v, want the signal's reason, target web, at 20s", ev[3])
	}
	// 2 replicas for 10 s, then 3 for 10 s; priced at 0.5.
	if sig.Cost.ReplicaSeconds != 50 || sig.Cost.Cost != 25 {
		t.Errorf("cost %+v, want 50 replica-seconds, 25", sig.Cost)
	}
	if got := r.Decisions(); got["scale_up"] != 2 || got["scale_down"] != 1 || got["no-op"] != 2 {
		t.Errorf("decision counts %v", got)
	}
	// No replica answered: the computer's failure, so the previous signal stands.
	allMissing := sample(0, 0, nil)
	allMissing.Missing = []pressure.MissingReplica{{Name: "r0", Err: errors.New("timeout")}}
	if _, err := r.Decide(at(25), allMissing, signal.Input{}); err == nil || !strings.Contains(err.Error(), "no replica answered") {
		t.Errorf("a pressure sample in which no replica answered: %v, want it failed", err)
	}
}

// The queue policy's desired count is the signal; a scale-up is in flight
// until its replicas show up or its token expires (15 s), so it is never
// asked for twice.
func TestQueueRunnerTracksLaunches(t *testing.T) {
	e := NewEngine(Config{})
	r := newRunner(t, e, "jobs", spec(policy.PolicyQueue))
	// 120 ready items, a 1 s default service time and a 30 s drain time
	// want 4 replicas.
	samples := []struct {
		sec      float64
		visible  int
		want     step
		reasonIn string
	}{
		{0, 1, step{policy.ScaleUp, 1, 4}, "drain 4"},
		{5, 1, step{policy.NoOp, 4, 4}, "no-op: at desired 4"},  // 3 in flight
		{10, 3, step{policy.NoOp, 4, 4}, "no-op: at desired 4"}, // 2 appeared, 1 in flight
		{20, 3, step{policy.ScaleUp, 3, 4}, "scale_up 3 -> 4"},  // the last token expired
	}
	for _, c := range samples {
		sig := decideAt(t, r, at(c.sec), sample(c.visible, 0.5, queue(120, 0)))
		if sig.Policy != policy.PolicyQueue || sig.Action != string(c.want.action) || sig.ScaleValue != float64(c.want.after) ||
			sig.RecommendedReplicas != c.want.after || !strings.Contains(sig.Reason, c.reasonIn) {
			t.Errorf("at %gs: %q %v/%d %q; want %s to %d with %q", c.sec, sig.Action, sig.ScaleValue, sig.RecommendedReplicas, sig.Reason,
				c.want.action, c.want.after, c.reasonIn)
		}
		if sig.RawScaleValue != 4 || sig.Compute.ReplicaCount != c.visible {
			t.Errorf("at %gs: raw %v compute replicas %d, want the formula's 4 and the compute view", c.sec, sig.RawScaleValue, sig.Compute.ReplicaCount)
		}
	}
	want := []step{}
	for _, c := range samples {
		want = append(want, c.want)
	}
	if got := steps(e.Events("jobs")); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if _, err := r.Decide(at(25), sample(1, 0, nil), signal.Input{}); !errors.Is(err, ErrNoQueue) {
		t.Errorf("no queue: %v, want ErrNoQueue", err)
	}
}

func TestElasticityRunners(t *testing.T) {
	tests := []struct {
		policy   string
		visible  int
		q        *pressure.QueueObservation
		want     step
		reasonIn string
	}{
		{policy.PolicyFixed, 2, nil, step{policy.NoOp, 2, 2}, "fixed: no-op"},
		{policy.PolicyFixed, 2, queue(50, 2), step{policy.NoOp, 2, 2}, "fixed: no-op"},
		{policy.PolicyFullyElastic, 1, queue(3, 1), step{policy.ScaleUp, 1, 2}, "target 3 = max(min(pending 3, max unbounded), min 0)"},
		{policy.PolicyFullyElastic, 3, queue(1, 0), step{policy.ScaleDown, 3, 2}, "current 3, above target: scale_down"},
		// max_count's maximum defaults to 0: nothing is scaled up.
		{policy.PolicyMaxCount, 1, queue(3, 0), step{policy.ScaleDown, 1, 0}, "max 0"},
		// Busy over visible is the utilization: no idle replica, no removal.
		{policy.PolicyMaxCount, 1, queue(3, 1), step{policy.NoOp, 1, 1}, "no idle replica"},
		// A fraction of an item is still work.
		{policy.PolicyFullyElastic, 0, &pressure.QueueObservation{Due: 0.4}, step{policy.ScaleUp, 0, 1}, "pending 1"},
		{policy.PolicyPoolWithThreshold, 2, queue(0, 2), step{policy.NoOp, 2, 2}, ">= high 0.80 for 1 of 2 ticks"},
	}
	for _, c := range tests {
		r := newRunner(t, NewEngine(Config{}), "w", spec(c.policy))
		sig := decideAt(t, r, t0, sample(c.visible, 0, c.q))
		if sig.Policy != c.policy || sig.Action != string(c.want.action) || sig.RecommendedReplicas != c.want.after ||
			!strings.Contains(sig.Reason, c.reasonIn) {
			t.Errorf("%s with %d visible: %q to %d, %q; want %s to %d with %q", c.policy, c.visible, sig.Action, sig.RecommendedReplicas,
				sig.Reason, c.want.action, c.want.after, c.reasonIn)
		}
	}
	for _, name := range []string{policy.PolicyFullyElastic, policy.PolicyMaxCount, policy.PolicyPoolWithThreshold} {
		r := newRunner(t, NewEngine(Config{}), "w", spec(name))
		if _, err := r.Decide(t0, sample(1, 0, nil), signal.Input{}); !errors.Is(err, ErrNoQueue) {
			t.Errorf("%s without a queue: %v, want ErrNoQueue", name, err)
		}
	}
}

// pool_with_threshold steps after two ticks over the threshold, then needs
// two more (its counter resets on a step); the launch counts as in flight
// until its replica shows up.
func TestThresholdRunnerNeedsConsecutiveTicks(t *testing.T) {
	e := NewEngine(Config{})
	r := newRunner(t, e, "w", spec(policy.PolicyPoolWithThreshold))
	for i, visible := range []int{2, 2, 2, 3, 3} {
		decideAt(t, r, at(float64(5*i)), sample(visible, 0, queue(0, float64(visible))))
	}
	want := []step{{policy.NoOp, 2, 2}, {policy.ScaleUp, 2, 3}, {policy.NoOp, 3, 3}, {policy.ScaleUp, 3, 4}, {policy.NoOp, 4, 4}}
	if got := steps(e.Events("w")); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// fully_elastic with 3 pending and replicas that start slowly: each tick
// adds one, counting those in flight, and a token that expires is asked for
// again.
func TestElasticRunnerCountsLaunchesInFlight(t *testing.T) {
	e := NewEngine(Config{})
	r := newRunner(t, e, "w", spec(policy.PolicyFullyElastic))
	for _, s := range []struct {
		sec     float64
		visible int
	}{{0, 0}, {5, 0}, {10, 1}, {25, 1}} {
		decideAt(t, r, at(s.sec), sample(s.visible, 0, queue(3, float64(s.visible))))
	}
	want := []step{
		{policy.ScaleUp, 0, 1},
		{policy.ScaleUp, 1, 2}, // 1 in flight
		{policy.ScaleUp, 2, 3}, // 1 appeared, 1 in flight
		{policy.ScaleUp, 1, 2}, // both later launches expired at 20 s and 25 s
	}
	if got := steps(e.Events("w")); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// fully_elastic with 1 pending and 3 replicas that leave slowly: each tick
// removes one, counting those still seen as leaving, so a no-op publishes
// the count asked for rather than the stale one; a removal that expires
// before it is seen is asked for again.
func TestElasticRunnerCountsRemovalsInFlight(t *testing.T) {
	e := NewEngine(Config{})
	r := newRunner(t, e, "w", spec(policy.PolicyFullyElastic))
	for _, s := range []struct {
		sec     float64
		visible int
		reason  string
	}{
		{0, 3, "current 3, above target"},
		{5, 3, "current 2 = 3 seen -1 leaving, above target"},
		{10, 3, "current 1 = 3 seen -2 leaving, at target: no-op"},
		{12, 2, "current 1 = 2 seen -1 leaving, at target: no-op"},
		{21, 2, "current 2, above target"}, // the 5 s removal expired at 20 s
	} {
		sig := decideAt(t, r, at(s.sec), sample(s.visible, 0, queue(1, 0)))
		if !strings.Contains(sig.Reason, s.reason) {
			t.Errorf("at %gs: reason %q, want %q", s.sec, sig.Reason, s.reason)
		}
	}
	want := []step{
		{policy.ScaleDown, 3, 2},
		{policy.ScaleDown, 2, 1},
		{policy.NoOp, 1, 1}, // not 3: both removals are in flight
		{policy.NoOp, 1, 1},
		{policy.ScaleDown, 2, 1},
	}
	if got := steps(e.Events("w")); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestCostAccruesOverVisibleReplicas(t *testing.T) {
	s := spec(policy.PolicyFixed)
	s["costPerReplicaSecond"] = "0.002"
	r := newRunner(t, NewEngine(Config{}), "w", s)
	var sig signal.ScalingSignal
	for _, c := range []struct {
		sec     float64
		visible int
	}{{0, 2}, {10, 4}, {15, 0}, {30, 1}} {
		sig = decideAt(t, r, at(c.sec), sample(c.visible, 0, nil))
	}
	// 2 x 10 + 4 x 5 + 0 x 15
	if sig.Cost.ReplicaSeconds != 40 || math.Abs(sig.Cost.Cost-0.08) > 1e-12 {
		t.Errorf("cost %+v, want 40 replica-seconds, 0.08", sig.Cost)
	}
}

func TestAuditKeepsTheLastEventsAndForgetsOnClose(t *testing.T) {
	e := NewEngine(Config{AuditSize: 2})
	a := newRunner(t, e, "a", spec(policy.PolicyFixed))
	b := newRunner(t, e, "b", spec(policy.PolicyFixed))
	for i := range 3 {
		decideAt(t, a, at(float64(5*i)), sample(1+i, 0, nil))
	}
	decideAt(t, b, at(7), sample(1, 0, nil))
	if got := steps(e.Events("a")); !slices.Equal(got, []step{{policy.NoOp, 2, 2}, {policy.NoOp, 3, 3}}) {
		t.Errorf("a keeps %v, want its last two", got)
	}
	all := e.AllEvents()
	if len(all) != 3 || all[1].Target != "b" || !all[2].Time.Equal(at(10)) {
		t.Errorf("all events %+v, want a@5, b@7, a@10 (newest last)", all)
	}
	a.Close()
	a.Close() // a second Close does nothing
	if ev := e.Events("a"); ev == nil || len(ev) != 0 {
		t.Errorf("a closed: %v, want an empty trail", ev)
	}
}

// A replica whose scrape failed still exists: it counts for current, the
// launch tracker and cost. Counted as gone, fixed would publish one fewer,
// the queue policy's held no-op one fewer (skipping its stabilization
// window), and a removal in flight would resolve, so the next sample asks
// for it again.
func TestMissedScrapeCountsAsAReplica(t *testing.T) {
	t.Run("fixed", func(t *testing.T) {
		s := spec(policy.PolicyFixed)
		s["costPerReplicaSecond"] = "1"
		r := newRunner(t, NewEngine(Config{}), "w", s)
		decideAt(t, r, at(0), sample(3, 0, nil))
		sig := decideAt(t, r, at(10), missing(sample(2, 0, nil), 1))
		if sig.RecommendedReplicas != 3 {
			t.Errorf("fixed with one scrape missed publishes %d, want 3", sig.RecommendedReplicas)
		}
		sig = decideAt(t, r, at(20), sample(3, 0, nil))
		if sig.Cost.ReplicaSeconds != 60 || sig.Cost.Cost != 60 {
			t.Errorf("cost %+v, want 3 replicas for 20 s", sig.Cost)
		}
	})
	t.Run("queue held no-op", func(t *testing.T) {
		e := NewEngine(Config{})
		r := newRunner(t, e, "q", spec(policy.PolicyQueue))
		// An empty queue wants 0, but the first window holds the current 3
		// for 60 s.
		decideAt(t, r, at(0), sample(3, 0, queue(0, 0)))
		sig := decideAt(t, r, at(5), missing(sample(2, 0, queue(0, 0)), 1))
		if sig.Action != string(policy.NoOp) || sig.RecommendedReplicas != 3 || !strings.Contains(sig.Reason, "held at 3") {
			t.Errorf("queue with one scrape missed: %s to %d (%q), want the held no-op at 3", sig.Action, sig.RecommendedReplicas, sig.Reason)
		}
		// The held no-op at 3, after one at 3, is counted into it.
		if ev := e.Events("q"); len(ev) != 1 || ev[0].Repeats != 1 || ev[0].Inputs["replicas"] != 3 {
			t.Errorf("events %+v, want one no-op at 3 replicas, repeated once", ev)
		}
	})
	t.Run("removal in flight", func(t *testing.T) {
		e := NewEngine(Config{})
		r := newRunner(t, e, "w", spec(policy.PolicyFullyElastic))
		for _, obs := range []pressure.Observation{
			sample(3, 0, queue(2, 0)),             // 3 -> 2
			missing(sample(2, 0, queue(2, 0)), 1), // a scrape missed: the removal is still in flight
			sample(3, 0, queue(2, 0)),             // it answers again: still in flight, no second removal
		} {
			decideAt(t, r, at(float64(5*len(e.Events("w")))), obs)
		}
		want := []step{{policy.ScaleDown, 3, 2}, {policy.NoOp, 2, 2}, {policy.NoOp, 2, 2}}
		if got := steps(e.Events("w")); !slices.Equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
	})
	t.Run("utilization over the replicas that answered", func(t *testing.T) {
		e := NewEngine(Config{})
		r := newRunner(t, e, "w", spec(policy.PolicyPoolWithThreshold))
		decideAt(t, r, at(0), missing(sample(2, 0, queue(0, 2)), 2))
		if in := e.Events("w")[0].Inputs; in["utilization"] != 1 || in["replicas"] != 4 {
			t.Errorf("inputs %v, want utilization 1 (2 busy of 2 answered) across 4 replicas", in)
		}
	})
}

// The arrival rate is measured between the times the counters were read
// (ObservedAt), not the times the samples were decided: a slow sample does
// not stretch the interval. Steady 10 arrivals/s, read every 5 s; the
// second sample is decided 4 s late.
func TestQueueRateUsesObservationTime(t *testing.T) {
	e := NewEngine(Config{})
	r := newRunner(t, e, "q", spec(policy.PolicyQueue))
	for _, x := range []struct{ observed, decided float64 }{{0, 0.1}, {5, 9}, {10, 10.1}, {15, 15.1}} {
		obs := sample(4, 0, &pressure.QueueObservation{Arrivals: 10 * x.observed})
		obs.ObservedAt = at(x.observed)
		decideAt(t, r, at(x.decided), obs)
		ev := e.Events("q")
		if rate := ev[len(ev)-1].Inputs["arrival_rate"]; x.observed > 0 && math.Abs(rate-10) > 1e-9 {
			t.Errorf("read at %gs, decided at %gs: rate %v/s, want 10/s", x.observed, x.decided, rate)
		}
	}
}

// A source that answered and saw no replica (scaled to zero) gives a valid
// sample: pressure reads zero across one replica, and the replica policies
// can scale up from zero. A sample in which replicas were expected and none
// answered fails for every policy.
func TestZeroReplicas(t *testing.T) {
	r := newRunner(t, NewEngine(Config{}), "p", spec(signal.PolicyPressure))
	sig := decideAt(t, r, at(0), sample(0, 0, nil))
	if sig.RawScaleValue != 0 || !strings.Contains(sig.Reason, "pressure 0.00 across 1 replica(s)") || !sig.SampledAt.Equal(at(0)) {
		t.Errorf("pressure at zero replicas: %+v", sig)
	}
	for _, name := range []string{policy.PolicyQueue, policy.PolicyFullyElastic} {
		r := newRunner(t, NewEngine(Config{}), "w", spec(name))
		sig := decideAt(t, r, at(0), sample(0, 0, queue(3, 0)))
		if sig.Action != string(policy.ScaleUp) || sig.RecommendedReplicas < 1 {
			t.Errorf("%s from zero with 3 ready: %s to %d (%q), want a scale-up", name, sig.Action, sig.RecommendedReplicas, sig.Reason)
		}
	}
	for _, name := range []string{signal.PolicyPressure, policy.PolicyQueue, policy.PolicyFixed, policy.PolicyFullyElastic} {
		r := newRunner(t, NewEngine(Config{}), "w", spec(name))
		if _, err := r.Decide(at(0), missing(sample(0, 0, queue(3, 0)), 2), signal.Input{}); err == nil {
			t.Errorf("%s folded a sample in which no replica answered", name)
		}
	}
}

// The pressure decider folds a sample of zero replicas after one with a
// replica as zero pressure across one replica (replicas = max(1, count),
// docs/semantics.md, "Dominant dimension x replicas"), so the signal stays
// fresh and KEDA's fallback does not flap. A sample in which replicas were
// expected and none answered fails, and its error says which did not.
func TestPressureDeciderFoldsZeroReplicas(t *testing.T) {
	r := newRunner(t, NewEngine(Config{}), "p", spec(signal.PolicyPressure))
	if w := r.WarmingUp(); w.Policy != signal.PolicyPressure {
		t.Errorf("warming-up signal without the pressure policy: %+v", w)
	}
	decideAt(t, r, at(0), sample(1, 0, nil))
	sig := decideAt(t, r, at(5), pressure.Observation{})
	if sig.Policy != signal.PolicyPressure || sig.RawScaleValue != 0 || sig.Reason != "activation pressure 0.00 across 1 replica(s)" || !sig.SampledAt.Equal(at(5)) {
		t.Errorf("zero replicas: %+v; want zero pressure across 1 replica, sampled now", sig)
	}
	if err := unanswered(pressure.Observation{}); err != nil {
		t.Errorf("unanswered(no replica, none missing) = %v", err)
	}
	err := unanswered(pressure.Observation{Missing: []pressure.MissingReplica{{Name: "a", Err: errors.New("timeout")}}})
	if err == nil || !strings.Contains(err.Error(), "no replica answered") || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("unanswered(all missing) = %v", err)
	}
}

// With slotsPerReplica, utilization is busy over the slots of the replicas
// that answered: 4 busy on 2 replicas of 4 slots is half full.
func TestUtilizationCountsSlots(t *testing.T) {
	e := NewEngine(Config{})
	s := spec(policy.PolicyPoolWithThreshold)
	s["slotsPerReplica"] = "4"
	r := newRunner(t, e, "w", s)
	sig := decideAt(t, r, at(0), sample(2, 0, queue(0, 4)))
	if u := e.Events("w")[0].Inputs["utilization"]; u != 0.5 || !strings.Contains(sig.Reason, "dead band") {
		t.Errorf("utilization %v (%q), want 0.5 in the dead band", u, sig.Reason)
	}
}
