package sampling

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// seasonSource is a source that holds the history (a Prometheus server
// does; pkg/pressure/promsource's tests read a real one): it answers one
// replica at half load, now and at any past instant, and records the
// history reads it was asked for.
type seasonSource struct {
	season pressure.Season
	err    error
	asked  []time.Time
	with   []pressure.ComputeCollector
	past   []int // the instants each backfill read asked for
}

var halfLoad = pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}}}

func (s *seasonSource) Observe(context.Context) (pressure.Observation, error) { return halfLoad, nil }

func (s *seasonSource) ObservePast(_ context.Context, first time.Time, step time.Duration, n int) ([]pressure.PastObservation, error) {
	s.past = append(s.past, n)
	out := make([]pressure.PastObservation, n)
	for k := range out {
		out[k] = pressure.PastObservation{At: first.Add(time.Duration(k) * step), Observation: halfLoad}
	}
	return out, nil
}

func (s *seasonSource) ObserveSeason(_ context.Context, at time.Time, compute pressure.ComputeCollector) (pressure.Season, error) {
	s.asked, s.with = append(s.asked, at), append(s.with, compute)
	return s.season, s.err
}

// warmCounter is countingDecider that folds the past too (decide.Warmer).
type warmCounter struct {
	countingDecider
	warmed []signal.Input
}

func (d *warmCounter) Warm(_ time.Time, _ pressure.Observation, in signal.Input) {
	d.warmed = append(d.warmed, in)
}

func TestTheSourcesHistoryReachesTheDecider(t *testing.T) {
	history := pressure.Season{Recent: []pressure.DemandPoint{{At: t0, Demand: 3}}}
	compute := pressure.ComputeCollector{ActivationWorkingSetTarget: 42}
	sampler := func(mode signal.ForecastMode, src *seasonSource, d *warmCounter) *Sampler {
		opts := signal.DefaultOptions()
		opts.Forecast = mode
		clock := newFakeClock()
		return NewSampler(SamplerConfig{Source: src, Compute: compute, Decider: d, Options: opts, Interval: 5 * time.Second, Clock: clock, Align: true, Backfill: 3})
	}

	for _, mode := range []signal.ForecastMode{signal.ForecastOn, signal.ForecastOnly} {
		t.Run("forecast "+string(mode), func(t *testing.T) {
			src, d := &seasonSource{season: history}, &warmCounter{}
			s := sampler(mode, src, d)
			ctx, cancel := context.WithCancel(context.Background())
			s.backfill(ctx)
			cancel()
			snap := s.SampleOnce(context.Background())
			if snap.LastErr != nil || len(d.calls) != 1 {
				t.Fatalf("sample: %v, %d decisions", snap.LastErr, len(d.calls))
			}
			if in := d.calls[0]; in.Season == nil || len(in.Season.Recent) != 1 || in.Season.Recent[0].Demand != 3 {
				t.Errorf("the decider got history %+v, want the source's", in.Season)
			}
			if len(src.asked) != 1 || !src.asked[0].Equal(snap.Signal.SampledAt) || src.with[0] != compute {
				t.Errorf("history asked at %v with %v; want once, at the sample's instant %v, with the sampler's collector", src.asked, src.with, snap.Signal.SampledAt)
			}
			// The backfilled past is read in one request, reads no
			// history, but says the source holds it, so the computer
			// keeps none of its own.
			if len(d.warmed) != 3 || len(src.past) != 1 {
				t.Fatalf("%d samples backfilled from %d reads, want 3 from one", len(d.warmed), len(src.past))
			}
			for _, in := range d.warmed {
				if in.Season == nil || in.Season.Recent != nil || in.Season.Long != nil {
					t.Errorf("a backfilled sample's history %+v, want an empty one", in.Season)
				}
			}
		})
	}

	t.Run("forecast off: no history read", func(t *testing.T) {
		src, d := &seasonSource{season: history}, &warmCounter{}
		s := sampler(signal.ForecastOff, src, d)
		if snap := s.SampleOnce(context.Background()); snap.LastErr != nil || len(src.asked) != 0 || d.calls[0].Season != nil {
			t.Errorf("forecast off: error %v, %d history reads, history %+v; want none", snap.LastErr, len(src.asked), d.calls[0].Season)
		}
	})

	t.Run("a failed history read does not fail the sample", func(t *testing.T) {
		src, d := &seasonSource{season: history, err: errors.New("range query refused")}, &warmCounter{}
		s := sampler(signal.ForecastOn, src, d)
		if snap := s.SampleOnce(context.Background()); snap.LastErr != nil || snap.Failures != 0 || d.calls[0].Season == nil || len(d.calls[0].Season.Recent) != 1 {
			t.Errorf("error %v, failures %d, history %+v; want the sample and what was read", snap.LastErr, snap.Failures, d.calls[0].Season)
		}
	})
}
