package decide

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

func pooled(name, pool string) map[string]string {
	s := spec(name)
	s["pool"] = pool
	return s
}

// Two members of one fully_elastic pool: the pool is 4 short, yet each tick
// adds one replica across both, to the member that needs it, whichever
// member samples first.
func TestPoolTakesOneStepPerTick(t *testing.T) {
	for _, order := range [][]string{{"a", "b"}, {"b", "a"}} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			e := NewEngine(Config{})
			runners := map[string]Decider{
				"a": newRunner(t, e, "a", pooled(policy.PolicyFullyElastic, "gpu")),
				"b": newRunner(t, e, "b", pooled(policy.PolicyFullyElastic, "gpu")),
			}
			pending := map[string]float64{"a": 1, "b": 4}
			desired := map[string]int{}
			for tick := range 3 {
				now := at(float64(5 * tick))
				names := order
				if tick == 0 {
					names = []string{"a", "b"} // a's first sample waits for b's
				}
				for _, name := range names {
					sig := decideAt(t, runners[name], now, sample(1, 0, queue(pending[name], 1)))
					desired[name] = sig.RecommendedReplicas
					if sig.RawScaleValue != float64(sig.RecommendedReplicas) {
						t.Errorf("%s: raw %v, want its own count, not the pool's target", name, sig.RawScaleValue)
					}
				}
			}
			// Tick 0: a waits, then b decides +1 for b; ticks 1 and 2 add
			// one more each to b, counting its launches in flight.
			wantA := []step{{policy.NoOp, 1, 1}, {policy.NoOp, 1, 1}, {policy.NoOp, 1, 1}, {policy.NoOp, 1, 1}}
			wantB := []step{{policy.ScaleUp, 1, 2}, {policy.ScaleUp, 2, 3}, {policy.ScaleUp, 3, 4}}
			if got := steps(e.Events("a")); !slices.Equal(got, wantA) {
				t.Errorf("a: %v, want %v", got, wantA)
			}
			if got := steps(e.Events("b")); !slices.Equal(got, wantB) {
				t.Errorf("b: %v, want %v", got, wantB)
			}
			if desired["a"] != 1 || desired["b"] != 4 {
				t.Errorf("published %v, want a 1, b 4", desired)
			}
			first := e.Events("a")[0].Reason
			if first != "pool gpu waits for the first sample of b: no-op" {
				t.Errorf("a's first reason %q", first)
			}
			last := e.Events("b")[2]
			if !strings.Contains(last.Reason, "pool gpu of 2 member(s), step on b") || last.Inputs["members"] != 2 {
				t.Errorf("b's last event %+v", last)
			}
			ups := 0
			for _, ev := range e.AllEvents() {
				if ev.Action == policy.ScaleUp {
					ups++
				}
			}
			if ups != 3 || runners["b"].Decisions()["scale_up"] != 3 || runners["a"].Decisions()["no-op"] != 4 {
				t.Errorf("%d scale-ups over 3 ticks; counts a %v b %v", ups, runners["a"].Decisions(), runners["b"].Decisions())
			}
		})
	}
}

// A member that stops sampling is left out after three intervals, and the
// reason names it; a member that samples again later in a decided tick
// gets its share without a second event.
func TestPoolLeavesOutASilentMember(t *testing.T) {
	e := NewEngine(Config{})
	a := newRunner(t, e, "a", pooled(policy.PolicyFixed, "p"))
	b := newRunner(t, e, "b", pooled(policy.PolicyFixed, "p"))
	decideAt(t, b, at(0), sample(2, 0, nil))
	decideAt(t, a, at(0), sample(1, 0, nil))
	decideAt(t, b, at(1), sample(2, 0, nil)) // same tick: its share again
	if n := len(e.Events("b")); n != 2 {
		t.Fatalf("b has %d events, want 2 (waiting, its share): a share is recorded once", n)
	}
	for _, sec := range []float64{5, 10, 15} {
		decideAt(t, a, at(sec), sample(1, 0, nil))
		if r := e.Events("a")[len(e.Events("a"))-1].Reason; strings.Contains(r, "left out") {
			t.Fatalf("at %gs b (last seen at 1s) was left out: %q", sec, r)
		}
	}
	sig := decideAt(t, a, at(20), sample(1, 0, nil))
	if !strings.HasSuffix(sig.Reason, "; left out, no sample for 3 intervals: b") || !strings.Contains(sig.Reason, "pool p of 1 member(s)") {
		t.Errorf("reason %q, want b left out", sig.Reason)
	}
	// b comes back in the tick a decided without it.
	sig = decideAt(t, b, at(21), sample(2, 0, nil))
	if sig.Action != "no-op" || sig.RecommendedReplicas != 2 || sig.Reason != "pool p decided this tick without b (it had no recent sample): no-op" {
		t.Errorf("b back mid-tick: %q %d %q", sig.Action, sig.RecommendedReplicas, sig.Reason)
	}
}

// A member that never samples holds the pool's first decision for three
// intervals only.
func TestPoolWaitsForFirstSamplesBriefly(t *testing.T) {
	e := NewEngine(Config{})
	a := newRunner(t, e, "a", pooled(policy.PolicyFullyElastic, "p"))
	newRunner(t, e, "b", pooled(policy.PolicyFullyElastic, "p"))
	for _, sec := range []float64{0, 5, 10} {
		if sig := decideAt(t, a, at(sec), sample(1, 0, queue(5, 1))); !strings.Contains(sig.Reason, "waits for the first sample of b") {
			t.Fatalf("at %gs: %q, want waiting", sec, sig.Reason)
		}
	}
	if sig := decideAt(t, a, at(15), sample(1, 0, queue(5, 1))); sig.Action != "scale_up" || !strings.Contains(sig.Reason, "left out") {
		t.Errorf("after 3 intervals: %q %q, want a step without b", sig.Action, sig.Reason)
	}
}

func TestPoolMembersMustAgree(t *testing.T) {
	e := NewEngine(Config{})
	newRunner(t, e, "a", pooled(policy.PolicyPoolWithThreshold, "p"))
	var conflict *PoolConflictError
	other := pooled(policy.PolicyPoolWithThreshold, "p")
	other["threshold"] = "0.9"
	if _, err := e.New("b", parse(t, other).Spec, nil, t0, nil); !errors.As(err, &conflict) ||
		conflict.Pool != "p" || !strings.Contains(err.Error(), "threshold=0.8 ") || !strings.Contains(err.Error(), "threshold=0.9 ") {
		t.Errorf("another threshold: %v", err)
	}
	fast := pooled(policy.PolicyPoolWithThreshold, "p")
	fast["sampleInterval"] = "1s"
	if _, err := e.New("b", parse(t, fast).Spec, nil, t0, nil); !errors.As(err, &conflict) {
		t.Errorf("another sample interval: %v", err)
	}
	if _, err := e.New("b", parse(t, pooled(policy.PolicyFullyElastic, "p")).Spec, nil, t0, nil); !errors.As(err, &conflict) {
		t.Errorf("another policy: %v", err)
	}
	priced := pooled(policy.PolicyPoolWithThreshold, "p")
	priced["costPerReplicaSecond"] = "3"
	b, err := e.New("b", parse(t, priced).Spec, nil, t0, nil)
	if err != nil {
		t.Fatalf("cost is per member: %v", err)
	}
	b.Close()
}

// The pool goes with its last member, so its name is free for other options.
func TestPoolIsDroppedWithItsLastMember(t *testing.T) {
	e := NewEngine(Config{})
	a, err := e.New("a", parse(t, pooled(policy.PolicyFixed, "p")).Spec, nil, t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := e.New("b", parse(t, pooled(policy.PolicyFullyElastic, "p")).Spec, nil, t0, nil)
	if err != nil {
		t.Fatalf("pool p after its members left: %v", err)
	}
	b.Close()
}

// A reaped target's runner closes after its sampler stops, which can be
// after a new runner took the same key. The old release must leave the new
// runner's pool membership, launches and events alone.
func TestSupersededRunnerReleasesOnlyItsOwn(t *testing.T) {
	for _, s := range []map[string]string{pooled(policy.PolicyFullyElastic, "gpu"), spec(signal.PolicyPressure)} {
		t.Run(s["policy"], func(t *testing.T) {
			e := NewEngine(Config{})
			old := newRunner(t, e, "a", s)
			decideAt(t, old, at(0), sample(1, 0.5, queue(1, 1)))
			fresh := newRunner(t, e, "a", s) // the key is acquired again before the old sampler stopped
			decideAt(t, fresh, at(5), sample(1, 0.5, queue(1, 1)))
			old.Close()
			decideAt(t, fresh, at(10), sample(1, 0.5, queue(1, 1))) // must not panic
			if got := len(e.Events("a")); got < 1 {
				t.Fatalf("the new runner's events were dropped: %d left", got)
			}
			fresh.Close()
			if got := len(e.Events("a")); got != 0 {
				t.Fatalf("the owner's close kept %d events", got)
			}
		})
	}
}

// A pool's members sample on their own timers, spread over the interval.
// Whatever their count and order, the pool takes one step per tick: with
// 3 members at offsets 0, 1/3 and 2/3 of the interval, a decision at
// half an interval since the last would let the third member decide again.
func TestPoolStepsOncePerTickAtAnyOffsets(t *testing.T) {
	const ticks = 6
	for _, n := range []int{2, 3, 4, 5} {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d members reverse %v", n, reverse), func(t *testing.T) {
				e := NewEngine(Config{})
				var names []string
				rs := map[string]Decider{}
				for i := range n {
					name := string(rune('a' + i))
					names = append(names, name)
					rs[name] = newRunner(t, e, name, pooled(policy.PolicyFullyElastic, "p"))
				}
				if reverse {
					slices.Reverse(names)
				}
				// Replicas start slowly and lots of work is pending: every
				// decision is a scale-up.
				for k := range ticks {
					for i, name := range names {
						decideAt(t, rs[name], at(5*float64(k)+5*float64(i)/float64(n)), sample(1, 0, queue(100, 1)))
					}
				}
				var decided []float64
				for _, ev := range e.AllEvents() {
					if ev.Action == policy.ScaleUp {
						decided = append(decided, ev.Time.Sub(t0).Seconds())
					}
				}
				// The first tick waits for every member's first sample.
				if len(decided) != ticks {
					t.Fatalf("%d scale-ups at %v s in %d ticks, want one per tick", len(decided), decided, ticks)
				}
				for i := 1; i < len(decided); i++ {
					if gap := decided[i] - decided[i-1]; gap < 4.5 {
						t.Errorf("steps at %v s: %g s apart", decided, gap)
					}
				}
			})
		}
	}
}
