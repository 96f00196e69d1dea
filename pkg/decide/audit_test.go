package decide

import (
	"fmt"
	"sync"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
)

func ev(target string, sec float64, after int) ledger.Event {
	return ledger.Event{Time: at(sec), Target: target, Policy: policy.PolicyFixed, Action: policy.NoOp, After: after}
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
