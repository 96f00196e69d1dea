package sampling

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/signal"
)

// DefaultHistory is how many of a target's newest published samples its
// history keeps at full resolution for the status page; older ones are
// kept as buckets of BucketSamples each, HistoryBuckets of them. At a 1 s
// interval that is 2 minutes in full and the hour before it in 25 s
// buckets (62 minutes in all; 5 hours at the default 5 s), in 120 x 24 +
// 144 x 40 = 8,640 bytes per target once it has sampled that long.
const (
	DefaultHistory = 120
	BucketSamples  = 25
	HistoryBuckets = DefaultHistory * 6 / 5
)

// HistoryPoint is one published sample as the history kept it, or, for
// an older stretch, the bucket of Samples samples that stands for it.
type HistoryPoint struct {
	// At is when the (first) sample was attempted.
	At time.Time
	// Samples is how many samples the point stands for: 1, or a
	// bucket's.
	Samples int
	// Raw is the instantaneous demand (RawScaleValue), Scale the published
	// ScaleValue, Forecast the forecast of raw demand (0 when none); a
	// bucket's are the highest of its samples, RawMin and ScaleMin the
	// lowest (equal to Raw and Scale for one sample).
	Raw, Scale, Forecast float64
	RawMin, ScaleMin     float64
	// Replicas is how many replicas the sample was measured across
	// (Compute.ReplicaCount); a bucket's the most, ReplicasMin the least.
	Replicas, ReplicasMin int
	// Parts are the parts of the reason that shaped the value (any of a
	// bucket's samples). Failed: the sample failed and the previous signal
	// stood. Stale: the published signal was stale at the attempt
	// (surfaces refused it as current).
	Parts         signal.Parts
	Failed, Stale bool
}

// The flags of a kept point: the reason's parts, and two more.
const (
	flagFailed uint8 = 1 << (6 + iota)
	flagStale
)

// point is a HistoryPoint as the ring keeps it: 24 bytes. The values are
// float32, ample for a chart, and the replica count saturates at 65535
// (a trigger's replica counts are bounded at 10,000).
type point struct {
	at                   int64 // unix nanoseconds
	raw, scale, forecast float32
	replicas             uint16
	flags                uint8 // the reason's parts | flagFailed | flagStale
}

// bucket is BucketSamples points folded into one: 40 bytes.
type bucket struct {
	at                     int64 // the first sample's
	rawMin, rawMax         float32
	scaleMin, scaleMax     float32
	forecast               float32 // the highest
	replicasMin, replicasN uint16  // the least and the most replicas
	flags                  uint8   // any sample's
	n                      uint8   // samples folded in
}

// history keeps the newest published samples in a ring of points and the
// older ones in a ring of buckets. The sampler records under the history's
// own lock at every publish (O(1); it allocates only while a ring grows,
// doubling up to its size, so a target that has not sampled long holds
// only what it has); a reader copies both out, so the cost of reading is
// the reader's.
type history struct {
	mu     sync.Mutex
	size   int
	points []point // grows to size, then a ring
	next   int     // once full, where the next point goes
	// buckets hold what fell out of points, the newest possibly still
	// filling (n < BucketSamples).
	buckets     []bucket // grows to HistoryBuckets' share of size, then a ring
	nextBucket  int      // once full, the oldest
	bucketLimit int
}

func newHistory(size int) *history {
	if size <= 0 {
		return nil
	}
	return &history{size: size, bucketLimit: size * 6 / 5}
}

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
		forecast: float32(sig.Forecast),
		replicas: uint16(min(max(sig.Compute.ReplicaCount, 0), math.MaxUint16)),
		flags:    uint8(sig.Parts),
	}
	if snap.LastErr != nil {
		p.flags |= flagFailed
	}
	if snap.Stale(snap.AttemptedAt) {
		p.flags |= flagStale
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case len(h.points) < cap(h.points):
		h.points = append(h.points, p)
	case len(h.points) < h.size:
		h.points = append(grown(h.points, h.size), p)
	default:
		h.fold(h.points[h.next])
		h.points[h.next] = p
		h.next = (h.next + 1) % h.size
	}
}

// fold adds a point that falls out of the full-resolution ring to the
// newest bucket, or starts a bucket when that one is full.
func (h *history) fold(p point) {
	if n := len(h.buckets); n > 0 {
		newest := (h.nextBucket + n - 1) % n
		if b := &h.buckets[newest]; b.n < BucketSamples {
			b.rawMin, b.rawMax = min(b.rawMin, p.raw), max(b.rawMax, p.raw)
			b.scaleMin, b.scaleMax = min(b.scaleMin, p.scale), max(b.scaleMax, p.scale)
			b.forecast = max(b.forecast, p.forecast)
			b.replicasMin, b.replicasN = min(b.replicasMin, p.replicas), max(b.replicasN, p.replicas)
			b.flags |= p.flags
			b.n++
			return
		}
	}
	b := bucket{at: p.at, rawMin: p.raw, rawMax: p.raw, scaleMin: p.scale, scaleMax: p.scale, forecast: p.forecast,
		replicasMin: p.replicas, replicasN: p.replicas, flags: p.flags, n: 1}
	switch {
	case len(h.buckets) < cap(h.buckets):
		h.buckets = append(h.buckets, b)
	case len(h.buckets) < h.bucketLimit:
		h.buckets = append(grown(h.buckets, h.bucketLimit), b)
	default:
		h.buckets[h.nextBucket] = b
		h.nextBucket = (h.nextBucket + 1) % h.bucketLimit
	}
}

// grown is s with room doubled, from a few up to limit exactly: append's
// own growth would overshoot limit.
func grown[T any](s []T, limit int) []T {
	out := make([]T, len(s), min(limit, max(8, 2*len(s))))
	copy(out, s)
	return out
}

// appendTo appends what is kept to dst, oldest first: the buckets, then
// the points.
func (h *history) appendTo(dst []HistoryPoint) []HistoryPoint {
	if h == nil {
		return dst
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	dst = slices.Grow(dst, len(h.buckets)+len(h.points))
	for i := range len(h.buckets) {
		b := h.buckets[(h.nextBucket+i)%len(h.buckets)]
		dst = append(dst, HistoryPoint{
			At: time.Unix(0, b.at), Samples: int(b.n),
			Raw: float64(b.rawMax), Scale: float64(b.scaleMax), Forecast: float64(b.forecast),
			RawMin: float64(b.rawMin), ScaleMin: float64(b.scaleMin),
			Replicas: int(b.replicasN), ReplicasMin: int(b.replicasMin),
			Parts: signal.Parts(b.flags &^ (flagFailed | flagStale)), Failed: b.flags&flagFailed != 0, Stale: b.flags&flagStale != 0,
		})
	}
	n, start := len(h.points), 0
	if n == h.size {
		start = h.next
	}
	for i := range n {
		p := h.points[(start+i)%n]
		dst = append(dst, HistoryPoint{
			At: time.Unix(0, p.at), Samples: 1,
			Raw: float64(p.raw), Scale: float64(p.scale), Forecast: float64(p.forecast),
			RawMin: float64(p.raw), ScaleMin: float64(p.scale),
			Replicas: int(p.replicas), ReplicasMin: int(p.replicas),
			Parts: signal.Parts(p.flags &^ (flagFailed | flagStale)), Failed: p.flags&flagFailed != 0, Stale: p.flags&flagStale != 0,
		})
	}
	return dst
}
