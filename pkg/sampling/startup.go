package sampling

import (
	"slices"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// startupSamples is how many of the latest start-ups the measured start-up
// is the median of: enough that one slow image pull does not set it, few
// enough that it follows a workload whose start-up changed.
const startupSamples = 5

// startupClock measures how long replicas take to start, from a source that
// tells starting replicas from ready ones (pressure.Observation.Starting,
// set by Kubernetes discovery): the time from the first sample that saw a
// replica starting to the first that saw it ready. A replica that leaves
// the starting list any other way (deleted or terminating before it was
// ready) measures nothing. Replicas already starting at the first sample
// are left out: when they began is not known. Not safe for concurrent use;
// one Sampler owns it.
type startupClock struct {
	primed bool
	since  map[string]time.Time // starting replicas by name: first seen at, zero when unknown
	recent [startupSamples]time.Duration
	n      int // start-ups held, <= startupSamples
	next   int // ring position of the next
	sorted [startupSamples]time.Duration
}

// observe folds the sample taken at at and returns the measured start-up:
// the median of the latest start-ups seen, 0 before the first.
func (c *startupClock) observe(obs pressure.Observation, at time.Time) time.Duration {
	first := !c.primed
	c.primed = true
	if len(obs.Starting) == 0 && len(c.since) == 0 {
		return c.measured()
	}
	if c.since == nil {
		c.since = map[string]time.Time{}
	}
	for name, began := range c.since {
		switch {
		case slices.Contains(obs.Starting, name):
		case readyIn(obs, name):
			if !began.IsZero() {
				c.record(at.Sub(began))
			}
			delete(c.since, name)
		default:
			delete(c.since, name)
		}
	}
	for _, name := range obs.Starting {
		if _, ok := c.since[name]; !ok {
			began := at
			if first {
				began = time.Time{} // unknown: started before the first sample
			}
			c.since[name] = began
		}
	}
	return c.measured()
}

// readyIn reports whether obs counts name as a ready replica: read, or
// ready but not answering (a missing replica is still one that started).
func readyIn(obs pressure.Observation, name string) bool {
	for _, r := range obs.Replicas {
		if r.Name == name {
			return true
		}
	}
	for _, m := range obs.Missing {
		if m.Name == name {
			return true
		}
	}
	return false
}

func (c *startupClock) record(d time.Duration) {
	c.recent[c.next] = min(max(d, 0), signal.MaxReplicaStartup)
	c.next = (c.next + 1) % startupSamples
	c.n = min(c.n+1, startupSamples)
}

// measured is the median of the start-ups held (the lower middle of an
// even count: the smaller lead), 0 with none.
func (c *startupClock) measured() time.Duration {
	if c.n == 0 {
		return 0
	}
	s := c.sorted[:c.n]
	copy(s, c.recent[:c.n])
	slices.Sort(s)
	return s[(c.n-1)/2]
}
