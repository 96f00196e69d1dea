package store

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
)

// ReplicaState is one replica's pushes whole, as the store holds them: what
// a scaler replica sends a peer that starts (package peer), so that the
// peer holds what it holds, counters' resets and histories included.
type ReplicaState struct {
	Namespace string
	Name      string
	Pod       bool
	Workload  map[string]string
	Series    []SeriesState
}

// SeriesState is one series whole: its kept points and what the next
// point is compared with (the last raw values, the offset of earlier
// resets, the last point's time and start).
type SeriesState struct {
	Metric string
	Labels []Label // sorted by name
	Kind   Kind
	// Bounds are a histogram's bucket bounds; nil for a summary or another
	// kind.
	Bounds []float64
	// History is oldest first; the last point is the newest (at LastT).
	History     []Point
	Raw, Offset Point // T unused
	LastT       int64 // Unix nanoseconds
	Start       int64
	FirstStart  int64
	Evicted     bool
	// Idle is how long ago the sender's store last wrote the series
	// (retention runs from it).
	Idle time.Duration
}

// Point is one kept point of a series (see the store's sample).
type Point struct {
	T        int64 // Unix nanoseconds
	V, Count float64
	Buckets  []float64
}

// HeldSince is the time from which the store holds every push made to the
// scaler: its start, or earlier once the state of a peer that held pushes
// from then on was imported (Restored). A source that reads the store
// before then cannot tell a replica that has not pushed since from one
// that does not exist.
func (s *Store) HeldSince() time.Time { return unixTime(s.heldSince.Load()) }

// Restored moves HeldSince back to since, when earlier: the store now
// holds a peer's state, and that peer held every push from since on.
func (s *Store) Restored(since time.Time) {
	t := since.UnixNano()
	for {
		cur := s.heldSince.Load()
		if t >= cur || s.heldSince.CompareAndSwap(cur, t) {
			return
		}
	}
}

// States returns every replica's state, one namespace at a time: each
// namespace is copied under its lock, and yielded after it is released,
// so a slow reader holds up no push.
func (s *Store) States() iter.Seq[ReplicaState] {
	return func(yield func(ReplicaState) bool) {
		now := s.opts.Now().UnixNano()
		s.mu.Lock()
		names := make([]string, 0, len(s.namespaces))
		for name := range s.namespaces {
			names = append(names, name)
		}
		s.mu.Unlock()
		slices.Sort(names)
		for _, name := range names {
			n := s.ns(name, false)
			if n == nil {
				continue
			}
			n.mu.Lock()
			out := make([]ReplicaState, 0, len(n.replicas))
			for _, r := range n.replicas {
				out = append(out, r.state(name, now))
			}
			n.mu.Unlock()
			for _, r := range out {
				if !yield(r) {
					return
				}
			}
		}
	}
}

func (r *replica) state(namespace string, now int64) ReplicaState {
	out := ReplicaState{Namespace: namespace, Name: r.name, Pod: r.pod, Workload: r.workload, Series: make([]SeriesState, 0, len(r.series))}
	for _, x := range r.series {
		st := SeriesState{
			Metric: x.metric, Labels: x.labels, Kind: x.kind, Bounds: x.bounds,
			History: make([]Point, len(x.hist)), Raw: x.raw.point(), Offset: x.offset.point(),
			LastT: x.lastT, Start: x.start, FirstStart: x.firstStart, Evicted: x.evicted,
			Idle: time.Duration(max(0, now-x.touched)),
		}
		for i, p := range x.hist {
			st.History[i] = p.point()
		}
		out.Series = append(out.Series, st)
	}
	return out
}

// point copies a sample out (the buckets too: the store writes its raw
// and offset buckets in place).
func (p sample) point() Point {
	return Point{T: p.t, V: p.v, Count: p.count, Buckets: slices.Clone(p.buckets)}
}

func (p Point) sample() sample {
	return sample{t: p.T, v: p.V, count: p.Count, buckets: slices.Clone(p.Buckets)}
}

// Import stores a peer's state of one replica, under the same caps as a
// push. A series the store holds at the same or a newer point is kept as
// it is (a push that reached this scaler first is newer than the state);
// otherwise the peer's state replaces it. It returns the series stored
// and those refused (a cap, or a state that does not hold together).
func (s *Store) Import(r ReplicaState) (stored, refused int) {
	if r.Namespace == "" || r.Name == "" {
		return 0, len(r.Series)
	}
	now := s.opts.Now().UnixNano()
	n := s.lockNS(r.Namespace)
	defer n.mu.Unlock()
	rep := n.replicas[r.Name]
	if rep == nil {
		if s.reserve(n, replicaOverhead, false) != "" {
			return 0, len(r.Series)
		}
		rep = &replica{name: r.Name, pod: r.Pod, series: map[string]*series{}}
		n.replicas[r.Name] = rep
	}
	if rep.workload == nil {
		rep.workload = make(map[string]string, len(r.Workload))
		for k, v := range r.Workload {
			if slices.Contains(WorkloadAttributes, k) {
				rep.workload[k] = v
			}
		}
	}
	var key []byte
	for _, st := range r.Series {
		if err := st.check(s.opts.HistoryPoints); err != nil {
			refused++
			continue
		}
		key = appendKey(key[:0], st.Metric, st.Labels)
		old := rep.series[string(key)]
		if old != nil && old.lastT >= st.LastT {
			continue
		}
		cost := s.seriesCost(string(key), st.Kind, len(st.Raw.Buckets))
		var prev int64
		if old != nil {
			prev = old.cost
		}
		if s.reserve(n, cost-prev, old == nil) != "" {
			refused++
			continue
		}
		x := &series{metric: st.Metric, labels: slices.Clone(st.Labels), kind: st.Kind, bounds: slices.Clone(st.Bounds),
			hist: make([]sample, len(st.History)), raw: st.Raw.sample(), offset: st.Offset.sample(),
			lastT: st.LastT, start: st.Start, firstStart: st.FirstStart, evicted: st.Evicted,
			cost: cost, touched: now - int64(st.Idle)}
		for i, p := range st.History {
			x.hist[i] = p.sample()
		}
		rep.series[string(key)] = x
		rep.newest = max(rep.newest, x.lastT)
		stored++
	}
	if len(rep.series) == 0 {
		delete(n.replicas, r.Name)
		s.release(n, replicaOverhead)
	}
	s.m.series.Set(float64(s.series.Load()))
	s.m.memory.Set(float64(s.memory.Load()))
	return stored, refused
}

// check refuses a state the store could not read back: no points, points
// out of order, or buckets that do not match the bounds.
func (st SeriesState) check(limit int) error {
	h := st.History
	switch {
	case st.Metric == "":
		return errors.New("no metric name")
	case st.Kind < Gauge || st.Kind > Histogram:
		return fmt.Errorf("kind %d", st.Kind)
	case len(h) == 0 || len(h) > limit || st.Kind == Gauge && len(h) > 1:
		return fmt.Errorf("%d points (allowed: 1, or up to %d for a counter or histogram)", len(h), limit)
	case !slices.IsSortedFunc(st.Labels, func(a, b Label) int { return strings.Compare(a.Name, b.Name) }):
		return errors.New("labels not sorted by name")
	case h[len(h)-1].T != st.LastT:
		return errors.New("the newest point is not the last one")
	case st.Idle < 0:
		return errors.New("idle for a negative time")
	}
	buckets := 0
	if st.Kind == Histogram && len(st.Bounds) > 0 {
		buckets = len(st.Bounds) + 1
	}
	if !sortedFinite(st.Bounds) || len(st.Raw.Buckets) != buckets || len(st.Offset.Buckets) != buckets {
		return errors.New("buckets that do not match the bounds")
	}
	for i, p := range h {
		if len(p.Buckets) != buckets || i > 0 && p.T <= h[i-1].T {
			return errors.New("points out of order, or buckets that do not match the bounds")
		}
	}
	return nil
}

// appendKey encodes a series' key, its metric name and sorted labels, as
// ingest does.
func appendKey(dst []byte, name string, labels []Label) []byte {
	dst = append(dst, name...)
	for _, l := range labels {
		dst = append(dst, 0xff)
		dst = append(dst, l.Name...)
		dst = append(dst, 0xfe)
		dst = append(dst, l.Value...)
	}
	return dst
}
