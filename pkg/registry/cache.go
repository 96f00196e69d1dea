package registry

import (
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/barometer-scaler/barometer/internal/mapsize"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// DefaultMaxBindings bounds the parsed triggers a registry keeps.
const DefaultMaxBindings = 10000

// binding is one ScaledObject's use of one target, and when the
// ScaledObject last asked for it.
type binding struct {
	ref    Ref
	target *Target
	seen   atomic.Int64 // unix nanoseconds
	gone   atomic.Bool  // forgotten: its cache entries are dead
	sums   []uint64     // its cache entries' sums; guarded by bindings.mu
	// trigger and raw are the trigger last parsed for ref and its
	// metadata (nil when bound without); guarded by Registry.mu.
	trigger *trigger.Trigger
	raw     map[string]string
}

// bindings keeps, for Resolve, the parsed trigger of every (ScaledObject,
// metadata) pair seen, by the content of the metadata: a changed map is a
// new entry, parsed anew. Reads take a read lock only; entries go with
// their target.
type bindings struct {
	seed maphash.Seed
	max  int

	mu      sync.RWMutex
	entries map[uint64][]cached
	n       int
}

// cached is one metadata map and what it parsed to: triggers of one
// target may differ in the keys only the surfaces read.
type cached struct {
	raw     map[string]string // a copy: the caller's map may change
	trigger *trigger.Trigger
	b       *binding
}

func newBindings(max int) bindings {
	return bindings{seed: maphash.MakeSeed(), max: max, entries: map[uint64][]cached{}}
}

// sum hashes ref and the content of raw, in no order: equal maps give equal
// sums however they were built.
func (c *bindings) sum(ref Ref, raw map[string]string) uint64 {
	h := maphash.String(c.seed, ref.Namespace)*31 ^ maphash.String(c.seed, ref.Name)
	for k, v := range raw {
		h += maphash.String(c.seed, k)*0x9e3779b97f4a7c15 ^ maphash.String(c.seed, v)
	}
	return h
}

// find returns the live binding of ref to exactly raw and its trigger, or
// nil.
func (c *bindings) find(sum uint64, ref Ref, raw map[string]string) (*binding, *trigger.Trigger) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.entries[sum] {
		if e.b.ref == ref && !e.b.gone.Load() && !e.b.target.reaped.Load() && maps.Equal(e.raw, raw) {
			return e.b, e.trigger
		}
	}
	return nil, nil
}

// add keeps b for raw, a copy the caller never modifies, unless the cache
// is full (the call then parses each time, correct and slower).
func (c *bindings) add(sum uint64, b *binding, tr *trigger.Trigger, raw map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= c.max {
		return
	}
	for _, e := range c.entries[sum] {
		if e.b.ref == b.ref && maps.Equal(e.raw, raw) {
			return
		}
	}
	c.entries[sum] = append(c.entries[sum], cached{raw: raw, trigger: tr, b: b})
	b.sums = append(b.sums, sum)
	c.n++
}

// forget drops the entries of bindings that are gone. It touches only
// their own entries, so a reaping of many targets holds the write lock for
// as long as their entries take, not for a walk of the whole cache.
func (c *bindings) forget(gone []*binding) {
	for _, b := range gone {
		b.gone.Store(true)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	before := len(c.entries)
	defer func() { c.entries = mapsize.Shrunk(c.entries, &before) }()
	for _, b := range gone {
		for _, sum := range b.sums {
			es := slices.DeleteFunc(c.entries[sum], func(e cached) bool { return e.b == b })
			c.n -= len(c.entries[sum]) - len(es)
			if len(es) == 0 {
				delete(c.entries, sum)
			} else {
				c.entries[sum] = es
			}
		}
		b.sums = nil
	}
}
