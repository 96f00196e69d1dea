package sampling

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// pods is an observation of ready (read) replicas and starting ones, by
// name.
func pods(ready []string, starting ...string) pressure.Observation {
	obs := pressure.Observation{Starting: starting}
	for _, name := range ready {
		obs.Replicas = append(obs.Replicas, pressure.ReplicaObservation{Name: name, CPUUtilisation: 0.5})
	}
	return obs
}

func TestStartupClockMeasuresStartingToReady(t *testing.T) {
	var c startupClock
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		obs  pressure.Observation
		at   int
		want time.Duration
	}{
		// Already starting at the first sample: when it began is unknown,
		// so its start-up is not measured.
		{pods([]string{"a"}, "old"), 0, 0},
		{pods([]string{"a"}, "old", "b"), 5, 0},
		{pods([]string{"a", "old"}, "b"), 10, 0},
		// b: seen starting at 5, ready at 25.
		{pods([]string{"a", "old", "b"}), 25, 20 * time.Second},
		// c starts and is deleted before it is ready: nothing measured.
		{pods([]string{"a", "old", "b"}, "c"), 30, 20 * time.Second},
		{pods([]string{"a", "old", "b"}), 35, 20 * time.Second},
		// d turns ready but misses the scrape: it started all the same.
		// Of 20s and 10s the median is the lower, the smaller lead.
		{pods([]string{"a"}, "d"), 40, 20 * time.Second},
		{pressure.Observation{Replicas: pods([]string{"a"}).Replicas, Missing: []pressure.MissingReplica{{Name: "d", Err: errors.New("timeout")}}}, 50, 10 * time.Second},
	}
	for _, s := range steps {
		if got := c.observe(s.obs, at(s.at)); got != s.want {
			t.Fatalf("at %ds: measured %v, want %v", s.at, got, s.want)
		}
	}
	// The median of the latest five: one slow start does not set it, and
	// a start-up past signal.MaxReplicaStartup counts as that bound.
	for i, d := range []time.Duration{30 * time.Second, 2 * time.Hour, 40 * time.Second, 50 * time.Second} {
		name := string(rune('e' + i))
		begin := at(100 + 10000*i)
		c.observe(pods(nil, name), begin)
		c.observe(pods([]string{name}), begin.Add(d))
	}
	// The ring keeps the latest five: 10s (d), 30s, 1h, 40s, 50s.
	if got := c.measured(); got != 40*time.Second {
		t.Errorf("median of the latest five = %v, want 40s", got)
	}
	if c.recent[(c.next+startupSamples-3)%startupSamples] != signal.MaxReplicaStartup {
		t.Errorf("a 2h start-up held as %v, want the bound %v", c.recent[(c.next+startupSamples-3)%startupSamples], signal.MaxReplicaStartup)
	}
	if len(c.since) != 0 {
		t.Errorf("replicas still tracked: %v", c.since)
	}
}

// The sampler measures start-ups from what its source reports and hands
// the measured start-up to its decider, whose computer's lag covers it when
// it is longer than the configured one (signal's TestLag).
func TestSamplerLagCoversTheMeasuredStartup(t *testing.T) {
	clock := newFakeClock()
	obs := []pressure.Observation{
		pods([]string{"a"}),
		pods([]string{"a"}, "b"),
		pods([]string{"a"}, "b"),
		pods([]string{"a"}, "b"),
		pods([]string{"a", "b"}),
	}
	src := &scripted{}
	for _, o := range obs {
		src.steps = append(src.steps, func() (pressure.Observation, error) { return o, nil })
	}
	opts := responsive(t)
	opts.ReplicaStartup = 5 * time.Second
	d := &recorder{Decider: pressureDecider(t, opts)}
	s := NewSampler(SamplerConfig{Source: src, Options: opts, Decider: d, Interval: 5 * time.Second, Clock: clock})
	for i := range obs {
		if i > 0 {
			clock.Advance(5 * time.Second)
		}
		if snap := s.SampleOnce(context.Background()); snap.LastErr != nil {
			t.Fatal(snap.LastErr)
		}
		if i < len(obs)-1 && d.in.MeasuredStartup != 0 {
			t.Fatalf("sample %d: measured start-up %v before a start-up was seen, want none (the configured %v counts)", i, d.in.MeasuredStartup, opts.ReplicaStartup)
		}
	}
	// b was first seen starting at 5 s and ready at 20 s.
	if got := d.in.MeasuredStartup; got != 15*time.Second {
		t.Errorf("measured start-up %v after b took 15s to start, want 15s", got)
	}
}
