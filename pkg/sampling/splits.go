package sampling

import (
	"slices"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// DefaultSplitFootprintTTL is how long a replica's last reported split
// footprint counts after it stops reporting.
const DefaultSplitFootprintTTL = time.Minute

// splitTracker keeps each replica's in-flight split footprint. A footprint is
// refreshed whenever its replica reports and expires ttl after that, so a
// replica lost mid-split cannot hold scale-in forever, while one that misses
// a single scrape still does. Not safe for concurrent use; owned by one
// Sampler.
type splitTracker struct {
	ttl        time.Duration
	footprints map[string]footprint
}

type footprint struct {
	splits float64
	seenAt time.Time
}

func newSplitTracker(ttl time.Duration) *splitTracker {
	if ttl <= 0 {
		ttl = DefaultSplitFootprintTTL
	}
	return &splitTracker{ttl: ttl, footprints: map[string]footprint{}}
}

// update folds one observation and reports the splits in flight anywhere.
//
// When obs.SplitsErr says some footprint could not be read, the sources do
// not say whose: a replica whose footprint was unreadable answered without
// one (HasSplits false). The footprints that were read are folded as
// usual; a replica that answered without one may be the unreadable one, so
// its earlier footprint is kept for later samples but not counted in this
// one (the probe fails open for it). Replicas that did not answer at all
// count as after any missed sample.
func (t *splitTracker) update(obs pressure.Observation, now time.Time) float64 {
	var unsure []string
	for _, r := range obs.Replicas {
		switch {
		case !r.HasSplits:
			if obs.SplitsErr != nil {
				unsure = append(unsure, r.Name)
			}
		case r.SplitsInFlight > 0:
			t.footprints[r.Name] = footprint{splits: r.SplitsInFlight, seenAt: now}
		default:
			delete(t.footprints, r.Name)
		}
	}
	var total float64
	for name, f := range t.footprints {
		if now.Sub(f.seenAt) >= t.ttl {
			delete(t.footprints, name)
			continue
		}
		if !slices.Contains(unsure, name) {
			total += f.splits
		}
	}
	return total
}
