package decide

import (
	"fmt"
	"sync"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
)

// ev is a change (a no-op with the last event's reason would be folded
// into it).
func ev(target string, sec float64, after int) ledger.Event {
	return ledger.Event{Time: at(sec), Target: target, Policy: policy.PolicyFixed, Action: policy.ScaleUp, After: after}
}

// Repeated no-ops are counted into the entry before them while their
// reason reads the same but for its numbers; a change, or a no-op with
// another reason, is an entry of its own. A ring of 3 keeps a scale-up
// through any number of steady samples.
func TestAuditFoldsRepeatedNoOps(t *testing.T) {
	a := newAuditLog(3)
	record := func(sec float64, action policy.Action, reason string) {
		before := 4
		if action == policy.ScaleUp {
			before = 2
		}
		a.Record(ledger.Event{Time: at(sec), Target: "w", Policy: "pressure", Action: action, Reason: reason, Before: before, After: 4})
	}
	record(0, policy.ScaleUp, "resource pressure 0.90 across 2 replica(s)")
	for i := 1; i <= 3600; i++ {
		record(float64(i), policy.NoOp, fmt.Sprintf("resource pressure 0.%02d across 4 replica(s)", 50+i%40))
	}
	record(3601, policy.NoOp, "resource pressure 0.40 across 4 replica(s); scale-in held by churn budget")
	record(3602, policy.NoOp, "resource pressure 0.41 across 4 replica(s); scale-in held by churn budget")
	got := a.Events("w")
	if len(got) != 2 || got[0].Action != policy.ScaleUp || got[0].Repeats != 3600 || !got[0].LastTime.Equal(at(3600)) ||
		got[1].Repeats != 1 || !got[1].Time.Equal(at(3601)) {
		t.Fatalf("events %+v, want the scale-up with 3600 repeats, then the held no-op with 1", got)
	}
	record(3603, policy.NoOp, "resource pressure 0.42 across 5 replica(s); scale-in held by churn budget")
	if n := len(a.Events("w")); n != 2 {
		t.Errorf("%d events, want a no-op at another count folded too", n)
	}
	a.Record(ledger.Event{Time: at(3604), Target: "w", Action: policy.NoOp, Reason: "resource pressure 0.42 across 5 replica(s); scale-in held by churn budget", Before: 5, After: 5})
	if n := len(a.Events("w")); n != 3 {
		t.Errorf("%d events, want the no-op at another count an entry of its own", n)
	}
	for _, pair := range [][2]string{{"a 1.5 b", "a 22 b"}, {"x", "x"}} {
		if !sameReason(pair[0], pair[1]) {
			t.Errorf("%q and %q differ", pair[0], pair[1])
		}
	}
	for _, pair := range [][2]string{{"a 1 b", "a 1 c"}, {"a", "ab"}, {"held", "held by"}} {
		if sameReason(pair[0], pair[1]) {
			t.Errorf("%q and %q read alike", pair[0], pair[1])
		}
	}
}

func TestAuditRingKeepsTheLastN(t *testing.T) {
	a := newAuditLog(3)
	for i := range 7 {
		a.Record(ev("ns/a", float64(i), i))
		got := a.Events("ns/a")
		if len(got) != min(i+1, 3) {
			t.Fatalf("after %d events: %d kept, want %d", i+1, len(got), min(i+1, 3))
		}
		for j, e := range got {
			if want := max(0, i-2) + j; e.After != want {
				t.Fatalf("after %d events: event %d is #%d, want #%d (oldest first)", i+1, j, e.After, want)
			}
		}
	}
	if got := a.Events("ns/none"); got != nil {
		t.Errorf("unknown target: %v", got)
	}
	a.Forget("ns/a")
	if got := a.Events("ns/a"); got != nil {
		t.Errorf("after Forget: %v", got)
	}
}

// A ring holds what was recorded, growing to its size and no further:
// a thousand targets that each decided once hold a thousand events, not a
// hundred thousand. Its order survives every growth and the wrap.
func TestAuditRingGrowsAsEventsArrive(t *testing.T) {
	a := newAuditLog(10)
	a.Record(ev("ns/a", 0, 0))
	if c := cap(a.targets["ns/a"].events); c > 4 {
		t.Fatalf("one event: ring of capacity %d, want at most 4", c)
	}
	for i := 1; i < 25; i++ {
		a.Record(ev("ns/a", float64(i), i))
		got := a.Events("ns/a")
		for j, e := range got {
			if want := max(0, i-9) + j; e.After != want {
				t.Fatalf("after %d events: event %d is #%d, want #%d (oldest first)", i+1, j, e.After, want)
			}
		}
	}
	if c := cap(a.targets["ns/a"].events); c != 10 {
		t.Errorf("full ring of size 10 has capacity %d", c)
	}
}

func TestAuditAllIsOrderedByTimeThenTarget(t *testing.T) {
	a := newAuditLog(2)
	for _, e := range []ledger.Event{ev("a", 0, 0), ev("b", 1, 0), ev("a", 2, 0), ev("b", 2, 0), ev("a", 3, 0)} {
		a.Record(e)
	}
	var got []string
	for _, e := range a.All() {
		got = append(got, fmt.Sprintf("%s@%v", e.Target, e.Time.Sub(t0).Seconds()))
	}
	if fmt.Sprint(got) != "[b@1 a@2 b@2 a@3]" {
		t.Errorf("All = %v", got) // a@0 fell out of a's ring of 2
	}
}

func TestAuditDefaultSizeAndConcurrency(t *testing.T) {
	a := newAuditLog(0)
	if a.size != ledger.DefaultAuditSize || ledger.DefaultAuditSize != 100 {
		t.Errorf("size %d, want the default 100", a.size)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 150 {
				a.Record(ev(fmt.Sprint(g%2), float64(i), i))
				a.Events("0")
				a.All()
			}
		})
	}
	wg.Wait()
	if n := len(a.Events("0")); n != 100 {
		t.Errorf("kept %d, want 100", n)
	}
}
