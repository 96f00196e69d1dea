package store

import (
	"slices"
	"strings"
	"time"
)

// Query is one read: the replicas of one workload in one namespace, and
// the series of the metrics named.
type Query struct {
	// Namespace is the reader's own namespace: a read never crosses it.
	Namespace string
	// Selector picks the workload: every attribute (one of
	// WorkloadAttributes) must equal the replica's. An empty selector
	// matches no replica.
	Selector map[string]string
	// Metrics names the series to return; others are not copied.
	Metrics map[string]bool
	// Window is the span a counter's rate and a histogram's mean and
	// quantile are read over, back from each series' newest point.
	Window time.Duration
}

// Replica is one replica's pushes, as a read sees them.
type Replica struct {
	// Name is the pod name, or the service.instance.id when the pushes
	// carry no pod name (Pod false).
	Name string
	Pod  bool
	// Newest is the newest data point of any of its series, in the
	// point's own time (its receive time when it was timed ahead).
	Newest time.Time
	Series []Series
}

// Series is one series at the time of a read.
type Series struct {
	Metric string
	Labels []Label // sorted by name
	Kind   Kind
	// At is the newest point's own time (its receive time when it was
	// timed ahead).
	At time.Time
	// Value is a gauge's value, a counter's cumulative count (never
	// falling: resets are added up) or a histogram's cumulative sum; Count
	// is a histogram's cumulative count.
	Value, Count float64
	// Rate is a counter's increase per second over the window, when the
	// history holds two points (HasRate).
	Rate    float64
	HasRate bool
	// WindowSum, WindowCount and WindowBuckets are a histogram's increase
	// over the window (its whole count when the history holds one point);
	// Bounds are the buckets' upper bounds, nil for a summary.
	WindowSum, WindowCount float64
	WindowBuckets, Bounds  []float64
}

// Label returns the value of the series' label name, "" when absent.
func (s Series) Label(name string) string {
	for _, l := range s.Labels {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// Mean is a histogram's mean observation over the window.
func (s Series) Mean() (float64, bool) {
	if s.Kind != Histogram || !(s.WindowCount > 0) {
		return 0, false
	}
	return s.WindowSum / s.WindowCount, true
}

// Quantile is a histogram's q-quantile over the window, from its buckets
// (see the package function Quantile).
func (s Series) Quantile(q float64) (float64, bool) {
	if s.Kind != Histogram {
		return 0, false
	}
	return Quantile(q, s.Bounds, s.WindowBuckets)
}

// Read returns the workload's replicas, by name, with the series asked
// for. It reads memory only.
func (s *Store) Read(q Query) []Replica {
	if len(q.Selector) == 0 {
		return nil
	}
	n := s.ns(q.Namespace, false)
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	window := int64(q.Window)
	var out []Replica
	for _, r := range n.replicas {
		if !matches(r.workload, q.Selector) {
			continue
		}
		rep := Replica{Name: r.name, Pod: r.pod, Newest: unixTime(r.newest)}
		for _, x := range r.series {
			if q.Metrics[x.metric] {
				rep.Series = append(rep.Series, x.view(window))
			}
		}
		slices.SortFunc(rep.Series, compareSeries)
		out = append(out, rep)
	}
	slices.SortFunc(out, func(a, b Replica) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func matches(workload, selector map[string]string) bool {
	for k, v := range selector {
		if w, ok := workload[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func compareSeries(a, b Series) int {
	if c := strings.Compare(a.Metric, b.Metric); c != 0 {
		return c
	}
	return slices.CompareFunc(a.Labels, b.Labels, func(x, y Label) int {
		if c := strings.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		return strings.Compare(x.Value, y.Value)
	})
}

// view copies a series out for a read (the labels are never written after
// creation, so they are shared).
func (x *series) view(window int64) Series {
	last := x.newest()
	v := Series{Metric: x.metric, Labels: x.labels, Kind: x.kind, At: unixTime(last.t), Value: last.v, Count: last.count}
	switch x.kind {
	case Counter:
		if b := x.base(window); b.t < last.t {
			v.Rate, v.HasRate = (last.v-b.v)/(time.Duration(last.t-b.t).Seconds()), true
		}
	case Histogram:
		v.Bounds = x.bounds
		v.WindowSum, v.WindowCount = last.v, last.count
		v.WindowBuckets = slices.Clone(last.buckets)
		if b := x.base(window); b.t < last.t {
			v.WindowSum -= b.v
			v.WindowCount -= b.count
			for i := range v.WindowBuckets {
				v.WindowBuckets[i] -= b.buckets[i]
			}
		}
	}
	return v
}
