package sampling

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/signal"
)

// DefaultHistory is how many published samples a target's history keeps
// for the status page: 30 minutes at the default 5 s interval, in 360 x 24
// bytes (about 8.4 KiB) per target once it has sampled that long.
const DefaultHistory = 360

// HistoryPoint is one published sample as the history kept it.
type HistoryPoint struct {
	// At is when the sample was attempted.
	At time.Time
	// Raw is the instantaneous demand (RawScaleValue), Scale the published
	// ScaleValue, Forecast the forecast of raw demand (0 when none).
	Raw, Scale, Forecast float64
	// Replicas is how many replicas the sample was measured across
	// (Compute.ReplicaCount).
	Replicas int
	// Held: the gate held a falling signal. Surge: the saturation surge
	// raised it. Failed: the sample failed and the previous signal stood.
	// Stale: the published signal was stale at the attempt (surfaces
	// refused it as current).
	Held, Surge, Failed, Stale bool
}

// The flags of a kept point.
const (
	flagHeld uint8 = 1 << iota
	flagSurge
	flagFailed
	flagStale
)

// point is a HistoryPoint as the ring keeps it: 24 bytes. The values are
// float32, ample for a chart, and the replica count saturates at 65535
// (a trigger's replica counts are bounded at 10,000).
type point struct {
	at                   int64 // unix nanoseconds
	raw, scale, forecast float32
	replicas             uint16
	flags                uint8
}

// history is a bounded ring of the last published samples. The sampler
// records under its own lock at every publish (O(1); it allocates only
// while the ring grows, doubling up to its size, so a target that has not
// sampled long holds only what it has); a reader copies the ring out under
// the ring's lock, so the cost of reading it is the reader's.
type history struct {
	mu     sync.Mutex
	size   int
	points []point // grows to size, then a ring
	next   int     // once full, where the next point goes
}

func newHistory(size int) *history {
	if size <= 0 {
		return nil
	}
	return &history{size: size}
}

// surgeReason is how the pressure computer's Reason names a sample the
// saturation surge raised (pkg/signal, Computer.reason).
const surgeReason = "; saturation surge"

// record keeps the snapshot just published.
func (h *history) record(snap *Snapshot) {
	if h == nil {
		return
	}
	sig := &snap.Signal
	p := point{
		at:       snap.AttemptedAt.UnixNano(),
		raw:      float32(sig.RawScaleValue),
		scale:    float32(sig.ScaleValue),
		forecast: float32(forecastOf(sig)),
		replicas: uint16(min(max(sig.Compute.ReplicaCount, 0), math.MaxUint16)),
	}
	if sig.Held {
		p.flags |= flagHeld
	}
	if strings.Contains(sig.Reason, surgeReason) {
		p.flags |= flagSurge
	}
	if snap.LastErr != nil {
		p.flags |= flagFailed
	}
	if snap.Stale(snap.AttemptedAt) {
		p.flags |= flagStale
	}
	h.mu.Lock()
	switch {
	case len(h.points) < cap(h.points):
		h.points = append(h.points, p)
	case len(h.points) < h.size:
		grown := make([]point, len(h.points), min(h.size, max(8, 2*len(h.points))))
		copy(grown, h.points)
		h.points = append(grown, p)
	default:
		h.points[h.next] = p
		h.next = (h.next + 1) % h.size
	}
	h.mu.Unlock()
}

// forecastOf is the forecast series' value: the signal's seasonal forecast
// of raw demand, 0 when it is off or found no season.
func forecastOf(sig *signal.ScalingSignal) float64 { return sig.Forecast }

// appendTo appends the kept points to dst, oldest first.
func (h *history) appendTo(dst []HistoryPoint) []HistoryPoint {
	if h == nil {
		return dst
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n, start := len(h.points), 0
	if n == h.size {
		start = h.next
	}
	dst = slices.Grow(dst, n)
	for i := range n {
		p := h.points[(start+i)%len(h.points)]
		dst = append(dst, HistoryPoint{
			At:  time.Unix(0, p.at),
			Raw: float64(p.raw), Scale: float64(p.scale), Forecast: float64(p.forecast),
			Replicas: int(p.replicas),
			Held:     p.flags&flagHeld != 0, Surge: p.flags&flagSurge != 0,
			Failed: p.flags&flagFailed != 0, Stale: p.flags&flagStale != 0,
		})
	}
	return dst
}
