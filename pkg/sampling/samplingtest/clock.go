// Package samplingtest provides a fake sampling.Clock. It is for tests only.
//
// It imports nothing from package sampling, so that package's own tests can
// use it too.
package samplingtest

import (
	"sync"
	"testing"
	"time"
)

// TickTimeout is how long Tick waits for each ticker to take its tick
// before it fails the test.
const TickTimeout = 5 * time.Second

// FakeClock is a manual sampling.Clock: Now moves only when the test advances
// it, and its tickers deliver only when the test calls Tick, so a test
// decides exactly when a sampler samples. Safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[chan time.Time]time.Duration
}

// NewFakeClock returns a clock standing at start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, tickers: map[chan time.Time]time.Duration{}}
}

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d, without ticking, and returns the
// new time.
func (c *FakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// NewTicker registers an unbuffered ticker of period d. It never fires on
// its own; Tick delivers to it until the stop function is called.
func (c *FakeClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time)
	c.mu.Lock()
	c.tickers[ch] = d
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.tickers, ch)
		c.mu.Unlock()
	}
}

// Tick advances the clock by d and delivers the new time to every live
// ticker of period d, blocking until each has taken it, and returns that
// time. It fails t when there is no such ticker or one does not take its
// tick within TickTimeout.
func (c *FakeClock) Tick(t testing.TB, d time.Duration) time.Time {
	t.Helper()
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	var chans []chan time.Time
	for ch, period := range c.tickers {
		if period == d {
			chans = append(chans, ch)
		}
	}
	c.mu.Unlock()
	if len(chans) == 0 {
		t.Fatalf("samplingtest: no ticker of period %v to tick", d)
	}
	timeout := time.NewTimer(TickTimeout)
	defer timeout.Stop()
	for _, ch := range chans {
		select {
		case ch <- now:
		case <-timeout.C:
			t.Fatalf("samplingtest: a ticker of period %v did not take its tick within %v", d, TickTimeout)
		}
	}
	return now
}
