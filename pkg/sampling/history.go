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
	points ring[point]
	// buckets hold what fell out of points, the newest possibly still
	// filling (n < BucketSamples).
	buckets ring[bucket]
}

func newHistory(size int) *history {
	if size <= 0 {
		return nil
	}
	return &history{points: ring[point]{limit: size}, buckets: ring[bucket]{limit: size * 6 / 5}}
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
	if old, full := h.points.push(p); full {
		h.fold(old)
	}
}

// fold adds a point that falls out of the full-resolution ring to the
// newest bucket, or starts a bucket when that one is full.
func (h *history) fold(p point) {
	if b := h.buckets.newest(); b != nil && b.n < BucketSamples {
		b.rawMin, b.rawMax = min(b.rawMin, p.raw), max(b.rawMax, p.raw)
		b.scaleMin, b.scaleMax = min(b.scaleMin, p.scale), max(b.scaleMax, p.scale)
		b.forecast = max(b.forecast, p.forecast)
		b.replicasMin, b.replicasN = min(b.replicasMin, p.replicas), max(b.replicasN, p.replicas)
		b.flags |= p.flags
		b.n++
		return
	}
	h.buckets.push(p.bucket())
}

// bucket is the point as a bucket of one sample.
func (p point) bucket() bucket {
	return bucket{at: p.at, rawMin: p.raw, rawMax: p.raw, scaleMin: p.scale, scaleMax: p.scale, forecast: p.forecast,
		replicasMin: p.replicas, replicasN: p.replicas, flags: p.flags, n: 1}
}

// view is the bucket as readers see it.
func (b bucket) view() HistoryPoint {
	return HistoryPoint{
		At: time.Unix(0, b.at), Samples: int(b.n),
		Raw: float64(b.rawMax), Scale: float64(b.scaleMax), Forecast: float64(b.forecast),
		RawMin: float64(b.rawMin), ScaleMin: float64(b.scaleMin),
		Replicas: int(b.replicasN), ReplicasMin: int(b.replicasMin),
		Parts: signal.Parts(b.flags &^ (flagFailed | flagStale)), Failed: b.flags&flagFailed != 0, Stale: b.flags&flagStale != 0,
	}
}

// appendTo appends what is kept to dst, oldest first: the buckets, then
// the points.
func (h *history) appendTo(dst []HistoryPoint) []HistoryPoint {
	if h == nil {
		return dst
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	dst = slices.Grow(dst, h.buckets.len()+h.points.len())
	for i := range h.buckets.len() {
		dst = append(dst, h.buckets.at(i).view())
	}
	for i := range h.points.len() {
		dst = append(dst, h.points.at(i).bucket().view())
	}
	return dst
}

// ring is a bounded ring that grows, doubling, up to limit items and then
// overwrites its oldest.
type ring[T any] struct {
	items []T
	next  int // once full, the oldest
	limit int
}

// push adds v; once the ring is full it returns the item v replaced.
func (r *ring[T]) push(v T) (old T, full bool) {
	if len(r.items) < r.limit {
		if len(r.items) == cap(r.items) {
			// append's own growth would overshoot limit.
			grown := make([]T, len(r.items), min(r.limit, max(8, 2*len(r.items))))
			copy(grown, r.items)
			r.items = grown
		}
		r.items = append(r.items, v)
		return old, false
	}
	old, r.items[r.next] = r.items[r.next], v
	r.next = (r.next + 1) % r.limit
	return old, true
}

func (r *ring[T]) len() int { return len(r.items) }

// at is the i-th item, oldest first.
func (r *ring[T]) at(i int) T { return r.items[(r.next+i)%len(r.items)] }

// newest is the item pushed last, nil when there is none.
func (r *ring[T]) newest() *T {
	n := len(r.items)
	if n == 0 {
		return nil
	}
	return &r.items[(r.next+n-1)%n]
}
