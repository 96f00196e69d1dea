package policy

import (
	"sync"
	"testing"
	"time"
)

func newTracker(t *testing.T) *LaunchTracker {
	t.Helper()
	lt, err := NewLaunchTracker(DefaultLaunchOptions())
	if err != nil {
		t.Fatal(err)
	}
	return lt
}

// launch records a scale-up of n replicas at now.
func launch(lt *LaunchTracker, target string, n int, now time.Time) {
	lt.Record(target, Decision{At: now, Action: ScaleUp, Before: 1, Desired: 1 + n})
}

func TestLaunchTokensResolveAndExpire(t *testing.T) {
	type op struct {
		at      float64
		launch  int // launch n at this time, after the Observe
		visible int
		want    int // in flight returned by Observe
	}
	tests := []struct {
		name string
		ops  []op
	}{
		{"a rise resolves the oldest tokens", []op{
			{at: 0, visible: 1, want: 0, launch: 2},
			{at: 5, visible: 1, want: 2},
			{at: 6, visible: 2, want: 1},
			{at: 7, visible: 3, want: 0},
		}},
		{"a token expires 15 s after its launch", []op{
			{at: 0, visible: 1, launch: 1},
			{at: 14.999, visible: 1, want: 1},
			{at: 15, visible: 1, want: 0},
		}},
		{"expiry is per token, oldest first", []op{
			{at: 0, visible: 0, launch: 1},
			{at: 10, visible: 0, want: 1, launch: 1},
			{at: 15, visible: 0, want: 1},
			{at: 25, visible: 0, want: 0},
		}},
		{"a rise beyond the tokens resolves them all", []op{
			{at: 0, visible: 0, launch: 1},
			{at: 1, visible: 5, want: 0},
			{at: 2, visible: 5, want: 0, launch: 1},
			{at: 3, visible: 5, want: 1},
		}},
		{"a fall resolves nothing; the rise after it does", []op{
			{at: 0, visible: 3, launch: 1},
			{at: 1, visible: 2, want: 1},
			{at: 2, visible: 3, want: 0},
		}},
		{"the first observation only sets the baseline", []op{
			{at: 0, visible: 0, want: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lt := newTracker(t)
			for i, o := range tt.ops {
				if got := lt.Observe("ns/w", o.visible, at(o.at)); got != o.want {
					t.Errorf("op %d at %vs: in flight %d, want %d", i, o.at, got, o.want)
				}
				launch(lt, "ns/w", o.launch, at(o.at))
			}
		})
	}
}

func TestLaunchBeforeAnyObservation(t *testing.T) {
	lt := newTracker(t)
	launch(lt, "a", 1, t0)
	if got := lt.Observe("a", 5, at(1)); got != 1 {
		t.Errorf("in flight %d, want 1: the first count is a baseline, not a rise", got)
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
				launch(lt, target, 1, at(float64(i)))
			}
		})
	}
	wg.Wait()
	if got := lt.Observe("a", 0, at(200)); got != 200 {
		t.Errorf("a has %d in flight, want 200", got)
	}
}

func TestScaleDownCancelsTheNewestTokens(t *testing.T) {
	lt := newTracker(t)
	lt.Observe("a", 2, t0)
	launch(lt, "a", 1, at(0))
	launch(lt, "a", 2, at(10))
	lt.Record("a", Decision{At: at(11), Action: NoOp, Before: 5, Desired: 5})
	lt.Record("a", Decision{At: at(11), Action: ScaleDown, Before: 5, Desired: 4})
	if got := lt.Observe("a", 2, at(11)); got != 2 {
		t.Fatalf("in flight %d, want 2", got)
	}
	// The token left from 10 s outlives the one from 0 s: the newest was cancelled.
	if got := lt.Observe("a", 2, at(15)); got != 1 {
		t.Errorf("in flight %d at 15 s, want 1", got)
	}
	lt.Record("a", Decision{At: at(16), Action: ScaleDown, Before: 3, Desired: 0})
	if got := lt.Observe("a", 2, at(16)); got != 0 {
		t.Errorf("in flight %d, want 0: a scale-down cancels at most every token", got)
	}
}

func TestDecisionsFeedTheTracker(t *testing.T) {
	lt := newTracker(t)
	q := newQueue(t, nil)
	obs := QueueObservation{Replicas: 2, Reservations: gauge(6)}
	obs.InFlight = lt.Observe("q", obs.Replicas, t0)
	d, st := q.Evaluate(QueueState{}, obs, t0)
	lt.Record("q", d)
	// Nothing has started yet: the 4 asked for are in flight, not asked again.
	obs.InFlight = lt.Observe("q", obs.Replicas, at(5))
	if d, _ = q.Evaluate(st, obs, at(5)); obs.InFlight != 4 || d.Action != NoOp || d.Desired != 6 {
		t.Errorf("in flight %d, %s -> %d; want 4 in flight and a no-op at 6", obs.InFlight, d.Action, d.Desired)
	}
}
