package sampling

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// pastSource answers as a Prometheus server would: what it reports for an
// instant depends on that instant only (here a steady climb of CPU across
// four replicas, measured half a second before it), whoever asks and
// whenever. A live answer takes delay, which differs between replicas as
// their distance to the server does.
type pastSource struct{ interval, delay time.Duration }

func (p pastSource) Observe(context.Context) (pressure.Observation, error) {
	now := time.Now()
	time.Sleep(p.delay)
	return p.at(now), nil
}

func (p pastSource) ObservePast(_ context.Context, first time.Time, step time.Duration, n int) ([]pressure.PastObservation, error) {
	time.Sleep(p.delay)
	var out []pressure.PastObservation
	for k := range n {
		at := first.Add(time.Duration(k) * step)
		out = append(out, pressure.PastObservation{At: at, Observation: p.at(at)})
	}
	return out, nil
}

func (p pastSource) at(at time.Time) pressure.Observation {
	at = at.Truncate(p.interval)
	step := float64(at.Unix() % 40)
	obs := pressure.Observation{MeasuredAt: at.Add(-500 * time.Millisecond)}
	for _, name := range []string{"a", "b", "c", "d"} {
		obs.Replicas = append(obs.Replicas, pressure.ReplicaObservation{Name: name, CPUUtilisation: 0.2 + 0.02*step})
	}
	return obs
}

// runAligned starts an aligned sampler on the system clock of the bubble
// and records the signal it published for each instant.
func runAligned(t testing.TB, ctx context.Context, profile string, interval, delay time.Duration, backfill int) map[time.Time]signal.ScalingSignal {
	opts, _ := signal.ProfileOptions(profile)
	s := NewSampler(SamplerConfig{Source: pastSource{interval, delay}, Decider: pressureDecider(t, opts), Interval: interval, Align: true, Backfill: backfill})
	got := map[time.Time]signal.ScalingSignal{}
	go s.Run(ctx)
	go func() {
		for snap := s.Load(); ; {
			select {
			case <-ctx.Done():
				return
			case <-snap.Next():
				snap = s.Load()
				got[snap.Signal.SampledAt] = snap.Signal
			}
		}
	}()
	return got
}

// Two replicas that read the same history (a Prometheus-backed target)
// and start apart, their answers arriving 10 and 40 ms after they ask,
// publish identical signals for every instant both sampled once the later
// one has folded its past; without the backfill the later one's lead
// reads a shorter window, and the two differ.
func TestBackfilledSamplersAgreeExactly(t *testing.T) {
	for _, c := range []struct {
		backfill int
		agree    bool
	}{{signal.DefaultLeadWindow, true}, {0, false}} {
		synctest.Test(t, func(t *testing.T) {
			const interval = time.Second
			ctx, cancel := context.WithCancel(context.Background())
			first := runAligned(t, ctx, signal.ProfileResponsive, interval, 10*time.Millisecond, c.backfill)
			time.Sleep(3300 * time.Millisecond)
			second := runAligned(t, ctx, signal.ProfileResponsive, interval, 40*time.Millisecond, c.backfill)
			time.Sleep(20 * interval)
			synctest.Wait()
			cancel()
			synctest.Wait()
			compared, differ := 0, 0
			for at, b := range second {
				a, ok := first[at]
				if !ok {
					continue
				}
				compared++
				if a.ScaleValue != b.ScaleValue || a.Reason != b.Reason {
					differ++
					if c.agree {
						t.Errorf("at %v: %v (%s) and %v (%s)", at, a.ScaleValue, a.Reason, b.ScaleValue, b.Reason)
					}
				}
			}
			if compared < 15 {
				t.Fatalf("backfill %d: only %d instants both sampled", c.backfill, compared)
			}
			if !c.agree && differ == 0 {
				t.Errorf("backfill 0: the replicas agreed at all %d instants; the test no longer shows what the backfill is for", compared)
			}
		})
	}
}

// Under the budgeted profile a replica that restarts ten minutes after
// its peer folds the 240 samples of its scale-in hold (the source's
// sawtooth falls every 40 s; the hold is what keeps the value up), so it
// never answers below its peer. What the backfill does not rebuild is the
// headroom the budget learnt by feedback: the new replica starts from 2
// widths where its peer has learnt less, answers above it, and agrees
// exactly once both have come down to the floor (about 9 minutes here;
// docs/compensation.md, "A restarted replica"). Without the backfill the
// new replica has no hold and answers below its peer.
func TestRestartedBudgetedReplicaNeverAnswersBelowItsPeer(t *testing.T) {
	const interval = time.Second
	budgeted, _ := signal.ProfileOptions(signal.ProfileBudgeted)
	for _, backfill := range []int{budgeted.WarmSamples(interval), 0} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			first := runAligned(t, ctx, signal.ProfileBudgeted, interval, 10*time.Millisecond, backfill)
			time.Sleep(10*time.Minute + 300*time.Millisecond)
			restart := time.Now()
			second := runAligned(t, ctx, signal.ProfileBudgeted, interval, 40*time.Millisecond, backfill)
			time.Sleep(15 * time.Minute)
			synctest.Wait()
			cancel()
			synctest.Wait()
			compared, below, lateDiffer := 0, 0, 0
			for at, b := range second {
				a, ok := first[at]
				if !ok {
					continue
				}
				compared++
				if b.ScaleValue < a.ScaleValue {
					below++
				}
				if at.Sub(restart) > 10*time.Minute && a.ScaleValue != b.ScaleValue {
					lateDiffer++
				}
			}
			if compared < 800 {
				t.Fatalf("backfill %d: only %d instants both sampled", backfill, compared)
			}
			switch {
			case backfill > 0 && below > 0:
				t.Errorf("backfill %d: the restarted replica answered below its peer at %d of %d instants", backfill, below, compared)
			case backfill > 0 && lateDiffer > 0:
				t.Errorf("backfill %d: %d instants differ more than 10 minutes after the restart", backfill, lateDiffer)
			case backfill == 0 && below == 0:
				t.Errorf("backfill 0: never below the peer in %d instants; the test no longer shows what the backfill is for", compared)
			}
		})
	}
}
