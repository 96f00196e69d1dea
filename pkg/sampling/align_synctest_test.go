package sampling

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// On the real clock, in a bubble whose time is fake: two samplers started
// 1.3 s apart, both aligned, take every sample after their first at the same
// multiples of the interval, so two scaler replicas read the same instants.
func TestAlignedSamplersAgreeOnTheSystemClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 5 * time.Second
		times := func() (*Sampler, *[]time.Time) {
			var at []time.Time
			src := pressure.SourceFunc(func(context.Context) (pressure.Observation, error) {
				at = append(at, time.Now())
				return pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}}}, nil
			})
			return NewSampler(SamplerConfig{Source: src, Decider: pressureDecider(t, signal.DefaultOptions()), Interval: interval, Align: true}), &at
		}
		ctx, cancel := context.WithCancel(context.Background())
		a, atA := times()
		go a.Run(ctx)
		time.Sleep(1300 * time.Millisecond)
		b, atB := times()
		go b.Run(ctx)
		time.Sleep(3 * interval)
		synctest.Wait()
		cancel()
		synctest.Wait()
		if len(*atA) < 4 || len(*atB) < 4 {
			t.Fatalf("samples: %d and %d", len(*atA), len(*atB))
		}
		for i, at := range append((*atA)[1:], (*atB)[1:]...) {
			if !at.Equal(at.Truncate(interval)) {
				t.Errorf("sample %d at %v, not a multiple of %v", i, at, interval)
			}
		}
		if !(*atA)[2].Equal((*atB)[1]) && !(*atA)[1].Equal((*atB)[1]) {
			t.Errorf("the samplers' aligned samples differ: %v and %v", *atA, *atB)
		}
	})
}
