package samplingtest_test

import (
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
)

var _ sampling.Clock = (*samplingtest.FakeClock)(nil)

func TestFakeClockTicksOnlyTheTickersOfThePeriod(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := samplingtest.NewFakeClock(start)
	if got := c.Advance(time.Second); !got.Equal(start.Add(time.Second)) || !c.Now().Equal(got) {
		t.Fatalf("Advance: %v, Now %v", got, c.Now())
	}
	fast, stopFast := c.NewTicker(time.Second)
	slow, stopSlow := c.NewTicker(time.Minute)
	defer stopSlow()

	got := make(chan time.Time)
	go func() { got <- <-fast }()
	at := c.Tick(t, time.Second)
	if want := start.Add(2 * time.Second); !at.Equal(want) || !(<-got).Equal(want) {
		t.Fatalf("tick at %v, want %v", at, want)
	}
	select {
	case <-slow:
		t.Fatal("a ticker of another period ticked")
	default:
	}

	stopFast()
	go func() { got <- <-slow }()
	at = c.Tick(t, time.Minute)
	if !(<-got).Equal(at) {
		t.Fatal("the minute ticker did not get the tick")
	}
}
