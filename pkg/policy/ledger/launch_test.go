package ledger

import (
	"sync"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
)

func newTracker(t *testing.T) *LaunchTracker {
	t.Helper()
	lt, err := NewLaunchTracker(DefaultLaunchOptions())
	if err != nil {
		t.Fatal(err)
	}
	return lt
}

// scale records a decision at now that changes the count by n: a scale-up
// for n > 0, a scale-down for n < 0, nothing for 0.
func scale(lt *LaunchTracker, target string, n int, now time.Time) {
	switch {
	case n > 0:
		lt.Record(target, policy.Decision{At: now, Action: policy.ScaleUp, Before: 1, Desired: 1 + n})
	case n < 0:
		lt.Record(target, policy.Decision{At: now, Action: policy.ScaleDown, Before: 10, Desired: 10 + n})
	}
}

func TestTrackerTokens(t *testing.T) {
	type op struct {
		at      float64
		visible int
		want    int // net in flight returned by Observe
		scale   int // then a decision changes the count by this much
	}
	tests := []struct {
		name string
		ops  []op
	}{
		// Launches.
		{"a rise resolves the oldest launches", []op{
			{at: 0, visible: 1, want: 0, scale: 2},
			{at: 5, visible: 1, want: 2},
			{at: 6, visible: 2, want: 1},
			{at: 7, visible: 3, want: 0},
		}},
		{"a launch expires 15 s after its decision", []op{
			{at: 0, visible: 1, scale: 1},
			{at: 14.999, visible: 1, want: 1},
			{at: 15, visible: 1, want: 0},
		}},
		{"expiry is per token, oldest first", []op{
			{at: 0, visible: 0, scale: 1},
			{at: 10, visible: 0, want: 1, scale: 1},
			{at: 15, visible: 0, want: 1},
			{at: 25, visible: 0, want: 0},
		}},
		{"a rise beyond the launches resolves them all", []op{
			{at: 0, visible: 0, scale: 1},
			{at: 1, visible: 5, want: 0},
			{at: 2, visible: 5, want: 0, scale: 1},
			{at: 3, visible: 5, want: 1},
		}},
		{"a fall resolves no launch; the rise after it does", []op{
			{at: 0, visible: 3, scale: 1},
			{at: 1, visible: 2, want: 1},
			{at: 2, visible: 3, want: 0},
		}},
		{"the first observation only sets the baseline", []op{
			{at: 0, visible: 0, want: 0},
		}},
		// Removals.
		{"a scale-down records a removal per replica", []op{
			{at: 0, visible: 4, want: 0, scale: -2},
			{at: 5, visible: 4, want: -2},
		}},
		{"a fall resolves the oldest removals", []op{
			{at: 0, visible: 4, scale: -1},
			{at: 10, visible: 4, want: -1, scale: -1},
			{at: 12, visible: 3, want: -1},
			{at: 15, visible: 3, want: -1}, // the one from 10 s is left
			{at: 25, visible: 3, want: 0},
		}},
		{"a removal expires 15 s after its decision", []op{
			{at: 0, visible: 3, scale: -1},
			{at: 14.999, visible: 3, want: -1},
			{at: 15, visible: 3, want: 0},
		}},
		{"a fall beyond the removals resolves them all", []op{
			{at: 0, visible: 5, scale: -1},
			{at: 1, visible: 2, want: 0},
			{at: 2, visible: 2, want: 0, scale: -1},
			{at: 3, visible: 2, want: -1},
		}},
		{"a rise resolves no removal; the fall after it does", []op{
			{at: 0, visible: 3, scale: -1},
			{at: 1, visible: 4, want: -1},
			{at: 2, visible: 3, want: 0},
		}},
		// Both.
		{"a scale-down cancels launches before it records removals", []op{
			{at: 0, visible: 2, scale: 1},
			{at: 1, visible: 2, want: 1, scale: -2},
			{at: 2, visible: 2, want: -1},
		}},
		{"the result is launches less removals", []op{
			{at: 0, visible: 3, scale: -1},
			{at: 1, visible: 3, want: -1, scale: 3},
			{at: 2, visible: 3, want: 2},
			{at: 3, visible: 2, want: 3}, // the removal is seen
			{at: 4, visible: 5, want: 0}, // and the launches
		}},
		{"a scale-up takes no removal back", []op{
			{at: 0, visible: 3, scale: -1},
			{at: 1, visible: 3, want: -1, scale: 1},
			{at: 2, visible: 3, want: 0},
			{at: 3, visible: 2, want: 1},
			{at: 4, visible: 3, want: 0},
		}},
		{"a cancelled launch that shows up is a removal", []op{
			{at: 0, visible: 2, scale: 1},
			{at: 1, visible: 2, want: 1, scale: -1},
			{at: 2, visible: 2, want: 0},
			{at: 3, visible: 3, want: -1}, // it had started: it is leaving
			{at: 4, visible: 2, want: 0},
		}},
		{"a cancelled launch that never shows up expires", []op{
			{at: 0, visible: 2, scale: 1},
			{at: 1, visible: 2, want: 1, scale: -1},
			{at: 14, visible: 2, want: 0},
			{at: 15, visible: 2, want: 0},
			{at: 16, visible: 3, want: 0},
		}},
		{"a removal from a cancelled launch expires 15 s after the cancel", []op{
			{at: 0, visible: 2, scale: 1},
			{at: 5, visible: 2, want: 1, scale: -1},
			{at: 10, visible: 3, want: -1},
			{at: 19.999, visible: 3, want: -1},
			{at: 20, visible: 3, want: 0},
		}},
		{"removals stay oldest first", []op{
			{at: 0, visible: 2, scale: 1},
			{at: 1, visible: 2, want: 1, scale: -1}, // cancels the 0 s launch
			{at: 2, visible: 2, want: 0, scale: -1}, // a removal at 2 s
			{at: 3, visible: 3, want: -2},           // the launch shows up: a removal at 1 s
			{at: 4, visible: 2, want: -1},           // resolves the one at 1 s
			{at: 16.5, visible: 2, want: -1},        // the one at 2 s is left
			{at: 17, visible: 2, want: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lt := newTracker(t)
			for i, o := range tt.ops {
				if got := lt.Observe("ns/w", o.visible, at(o.at)); got != o.want {
					t.Errorf("op %d at %vs: in flight %d, want %d", i, o.at, got, o.want)
				}
				scale(lt, "ns/w", o.scale, at(o.at))
			}
		})
	}
}

func TestTrackerBeforeAnyObservation(t *testing.T) {
	lt := newTracker(t)
	scale(lt, "a", 1, t0)
	scale(lt, "r", -1, t0)
	if got := lt.Observe("a", 5, at(1)); got != 1 {
		t.Errorf("in flight %d, want 1: the first count is a baseline, not a rise", got)
	}
	if got := lt.Observe("r", 0, at(1)); got != -1 {
		t.Errorf("in flight %d, want -1: the first count is a baseline, not a fall", got)
	}
	if got := lt.Observe("b", 0, at(1)); got != 0 {
		t.Errorf("targets share tokens: b has %d in flight", got)
	}
	lt.Forget("a")
	if got := lt.Observe("a", 6, at(2)); got != 0 {
		t.Errorf("after Forget: %d in flight", got)
	}
}

func TestLaunchTrackerOptionsAndConcurrency(t *testing.T) {
	wantField(t, LaunchOptions{}.Validate(), "TTL")
	if _, err := NewLaunchTracker(LaunchOptions{TTL: -time.Second}); err == nil {
		t.Error("accepted a negative TTL")
	}
	lt, err := NewLaunchTracker(LaunchOptions{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			target := string(rune('a' + g%2))
			for i := range 100 {
				lt.Observe(target, 0, at(float64(i)))
				scale(lt, target, 1, at(float64(i)))
				scale(lt, "down", -1, at(float64(i)))
			}
		})
	}
	wg.Wait()
	if got := lt.Observe("a", 0, at(200)); got != 200 {
		t.Errorf("a has %d in flight, want 200", got)
	}
	if got := lt.Observe("down", 0, at(200)); got != -400 {
		t.Errorf("down has %d in flight, want -400", got)
	}
}

func TestScaleDownCancelsTheNewestLaunches(t *testing.T) {
	lt := newTracker(t)
	lt.Observe("a", 2, t0)
	scale(lt, "a", 1, at(0))
	scale(lt, "a", 2, at(10))
	lt.Record("a", policy.Decision{At: at(11), Action: policy.NoOp, Before: 5, Desired: 5})
	lt.Record("a", policy.Decision{At: at(11), Action: policy.ScaleDown, Before: 5, Desired: 4})
	if got := lt.Observe("a", 2, at(11)); got != 2 {
		t.Fatalf("in flight %d, want 2", got)
	}
	// The launch left from 10 s outlives the one from 0 s: the newest was cancelled.
	if got := lt.Observe("a", 2, at(15)); got != 1 {
		t.Errorf("in flight %d at 15 s, want 1", got)
	}
	lt.Record("a", policy.Decision{At: at(16), Action: policy.ScaleDown, Before: 3, Desired: 0})
	if got := lt.Observe("a", 2, at(16)); got != -2 {
		t.Errorf("in flight %d, want -2: the last launch is cancelled, then 2 replicas leave", got)
	}
}

// A cancelled launch's replica may never show: launch A is cancelled by a
// scale-down (the ReplicaSet deletes its unstarted pod), then launch B is
// asked for, and the next new replica is B's. Read as A's, A turns into a
// removal and B stays in flight: right while both live, but the removal,
// stamped at A's cancellation, expired before B's launch, leaving current
// one too many until B's expired too. The removal now lasts as long as B.
func TestCancelledLaunchRemovalPairsWithALiveLaunch(t *testing.T) {
	lt := newTracker(t)
	lt.Observe("q", 2, at(0))
	lt.Record("q", policy.Decision{At: at(0), Action: policy.ScaleUp, Before: 2, Desired: 3}) // A
	in := lt.Observe("q", 2, at(5))
	lt.Record("q", policy.Decision{At: at(5), Action: policy.ScaleDown, Before: 2 + in, Desired: 2}) // cancels A
	in = lt.Observe("q", 2, at(8))
	lt.Record("q", policy.Decision{At: at(8), Action: policy.ScaleUp, Before: 2 + in, Desired: 3}) // B
	for _, sec := range []float64{12, 16, 19, 21, 22.9, 23, 24} {
		if in := lt.Observe("q", 3, at(sec)); in != 0 {
			t.Errorf("at %gs: 3 replicas run, in flight %+d, want 0", sec, in)
		}
	}
	// Had A's replica shown up after all (a late sample), it leaves next:
	// its fall resolves the removal, and B is still on its way.
	lt = newTracker(t)
	lt.Observe("r", 2, at(0))
	lt.Record("r", policy.Decision{At: at(0), Action: policy.ScaleUp, Before: 2, Desired: 3})   // A
	lt.Record("r", policy.Decision{At: at(1), Action: policy.ScaleDown, Before: 3, Desired: 2}) // cancels A
	lt.Record("r", policy.Decision{At: at(2), Action: policy.ScaleUp, Before: 2, Desired: 3})   // B
	if in := lt.Observe("r", 3, at(3)); in != 0 {
		t.Errorf("A's replica showed: in flight %+d, want 0 (B coming, A leaving)", in)
	}
	if in := lt.Observe("r", 2, at(4)); in != 1 {
		t.Errorf("A's replica left: in flight %+d, want +1 (B)", in)
	}
	if in := lt.Observe("r", 3, at(5)); in != 0 {
		t.Errorf("B's replica showed: in flight %+d, want 0", in)
	}
	// With no live launch left to pair, the removal keeps its own time.
	lt = newTracker(t)
	lt.Observe("s", 2, at(0))
	lt.Record("s", policy.Decision{At: at(0), Action: policy.ScaleUp, Before: 2, Desired: 3})   // A
	lt.Record("s", policy.Decision{At: at(1), Action: policy.ScaleDown, Before: 3, Desired: 2}) // cancels A
	if in := lt.Observe("s", 3, at(2)); in != -1 {
		t.Errorf("A's replica showed: in flight %+d, want -1", in)
	}
	if in := lt.Observe("s", 3, at(16)); in != 0 {
		t.Errorf("at 16 s: in flight %+d, want 0 (the removal from 1 s expired)", in)
	}
}
