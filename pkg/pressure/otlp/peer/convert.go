package peer

import (
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	peerv1 "github.com/barometer-scaler/barometer/proto/barometer/peer/v1"
)

// The store's states on the wire (proto/barometer/peer/v1), both ways.

var kinds = map[store.Kind]peerv1.Kind{
	store.Gauge:     peerv1.Kind_KIND_GAUGE,
	store.Counter:   peerv1.Kind_KIND_COUNTER,
	store.Histogram: peerv1.Kind_KIND_HISTOGRAM,
}

func seriesToProto(x store.SeriesState) *peerv1.Series {
	out := &peerv1.Series{
		Metric: x.Metric, Kind: kinds[x.Kind], Bounds: x.Bounds,
		History: make([]*peerv1.Point, len(x.History)), Raw: pointToProto(x.Raw), Offset: pointToProto(x.Offset),
		LastTimeUnixNano: x.LastT, StartTimeUnixNano: x.Start, FirstStartTimeUnixNano: x.FirstStart,
		Evicted: x.Evicted, IdleNanos: int64(x.Idle),
	}
	for _, l := range x.Labels {
		out.Labels = append(out.Labels, &peerv1.Label{Name: l.Name, Value: l.Value})
	}
	for i, pt := range x.History {
		out.History[i] = pointToProto(pt)
	}
	return out
}

func pointToProto(pt store.Point) *peerv1.Point {
	return &peerv1.Point{TimeUnixNano: pt.T, Value: pt.V, Count: pt.Count, Buckets: pt.Buckets}
}

func replicaFromProto(r *peerv1.Replica) store.ReplicaState {
	out := store.ReplicaState{Namespace: r.GetNamespace(), Name: r.GetName(), Pod: r.GetPod(), Workload: r.GetWorkload(),
		Series: make([]store.SeriesState, 0, len(r.GetSeries()))}
	for _, x := range r.GetSeries() {
		kind := store.Kind(-1) // refused by the store's check
		for k, v := range kinds {
			if v == x.GetKind() {
				kind = k
			}
		}
		st := store.SeriesState{
			Metric: x.GetMetric(), Kind: kind, Bounds: x.GetBounds(),
			History: make([]store.Point, len(x.GetHistory())), Raw: pointFromProto(x.GetRaw()), Offset: pointFromProto(x.GetOffset()),
			LastT: x.GetLastTimeUnixNano(), Start: x.GetStartTimeUnixNano(), FirstStart: x.GetFirstStartTimeUnixNano(),
			Evicted: x.GetEvicted(), Idle: time.Duration(x.GetIdleNanos()),
		}
		for _, l := range x.GetLabels() {
			st.Labels = append(st.Labels, store.Label{Name: l.GetName(), Value: l.GetValue()})
		}
		for i, pt := range x.GetHistory() {
			st.History[i] = pointFromProto(pt)
		}
		out.Series = append(out.Series, st)
	}
	return out
}

func pointFromProto(pt *peerv1.Point) store.Point {
	return store.Point{T: pt.GetTimeUnixNano(), V: pt.GetValue(), Count: pt.GetCount(), Buckets: pt.GetBuckets()}
}
