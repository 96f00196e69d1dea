package store

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// Grant says where a push may write: the namespace to write a resource's
// points to, given what its k8s.namespace.name claims ("" when absent),
// and false when the push's credential does not allow it.
type Grant interface {
	Namespace(claimed string) (string, bool)
}

// Result is what became of a push's data points.
type Result struct {
	Accepted int
	// Rejected points were refused (answered as OTLP's
	// rejected_data_points); Forbidden counts those refused because the
	// grant does not allow their namespace.
	Rejected, Forbidden int
	// Ignored points were out of order, duplicates or carried no value:
	// not errors (a retried push repeats points), so not rejected.
	Ignored int
	// Retimed points, among the accepted, were timed in the future within
	// MaxClockSkew and stored at their receive time.
	Retimed int
	// Message names the rejections' reasons, and warns of points retimed
	// by a second or more (a clock that far ahead is wrong; a few
	// milliseconds are the clocks' usual drift); "" when neither.
	Message string
}

// CountPoints counts the data points of a push, every kind alike.
func CountPoints(rms []*metricspb.ResourceMetrics) int {
	n := 0
	for _, rm := range rms {
		n += resourcePoints(rm)
	}
	return n
}

func resourcePoints(rm *metricspb.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.GetScopeMetrics() {
		for _, m := range sm.GetMetrics() {
			n += metricPoints(m)
		}
	}
	return n
}

func metricPoints(m *metricspb.Metric) int {
	switch {
	case m.GetGauge() != nil:
		return len(m.GetGauge().GetDataPoints())
	case m.GetSum() != nil:
		return len(m.GetSum().GetDataPoints())
	case m.GetHistogram() != nil:
		return len(m.GetHistogram().GetDataPoints())
	case m.GetSummary() != nil:
		return len(m.GetSummary().GetDataPoints())
	case m.GetExponentialHistogram() != nil:
		return len(m.GetExponentialHistogram().GetDataPoints())
	}
	return 0
}

// Ingest stores a push's points where g allows. A push over
// MaxPointsPerRequest is refused whole (ErrTooManyPoints); otherwise each
// point is stored, ignored or rejected on its own.
func (s *Store) Ingest(rms []*metricspb.ResourceMetrics, g Grant) (Result, error) {
	if n := CountPoints(rms); n > s.opts.MaxPointsPerRequest {
		s.m.rejected.WithLabelValues("request_points_cap").Add(float64(n))
		return Result{Rejected: n}, fmt.Errorf("%w: %d points, the cap is %d", ErrTooManyPoints, n, s.opts.MaxPointsPerRequest)
	}
	now := s.opts.Now()
	in := ingest{s: s, now: now.UnixNano(), future: now.Add(s.opts.MaxClockSkew).UnixNano()}
	for _, rm := range rms {
		in.resource(rm, g)
	}
	s.m.accepted.Add(float64(in.res.Accepted))
	s.m.retimed.Add(float64(in.res.Retimed))
	in.res.Message = in.message()
	s.m.series.Set(float64(s.series.Load()))
	s.m.memory.Set(float64(s.memory.Load()))
	s.maybeSweep(now)
	return in.res, nil
}

// ingest is one push in progress.
type ingest struct {
	s           *Store
	now, future int64
	res         Result
	ahead       int64    // the most a retimed point was ahead, nanoseconds
	reasons     []string // in the order first met
	counts      map[string]int
	key         []byte  // reused series key
	attrs       []Label // reused sorted attributes
}

func (in *ingest) reject(reason string, n int) {
	if n == 0 {
		return
	}
	in.res.Rejected += n
	if reason == reasonNamespace {
		in.res.Forbidden += n
	}
	if in.counts == nil {
		in.counts = map[string]int{}
	}
	if in.counts[reason] == 0 {
		in.reasons = append(in.reasons, reason)
	}
	in.counts[reason] += n
	in.s.m.rejected.WithLabelValues(reason).Add(float64(n))
}

func (in *ingest) ignore(reason string) {
	in.res.Ignored++
	in.s.m.ignored.WithLabelValues(reason).Inc()
}

func (in *ingest) message() string {
	parts := make([]string, 0, len(in.reasons)+1)
	for _, r := range in.reasons {
		parts = append(parts, fmt.Sprintf("%d points: %s", in.counts[r], reasonText[r]))
	}
	if in.ahead >= int64(time.Second) {
		parts = append(parts, fmt.Sprintf("%d points timed up to %s in the future (check the pusher's clock): stored at their receive time",
			in.res.Retimed, time.Duration(in.ahead).Round(time.Millisecond)))
	}
	return strings.Join(parts, "; ")
}

func (in *ingest) resource(rm *metricspb.ResourceMetrics, g Grant) {
	attrs := rm.GetResource().GetAttributes()
	ns, ok := g.Namespace(stringAttr(attrs, AttrNamespace))
	if !ok {
		in.reject(reasonNamespace, resourcePoints(rm))
		return
	}
	name, pod := stringAttr(attrs, AttrPod), true
	if name == "" {
		name, pod = stringAttr(attrs, AttrInstanceID), false
	}
	if name == "" {
		in.reject(reasonNoReplica, resourcePoints(rm))
		return
	}
	n := in.s.lockNS(ns)
	defer n.mu.Unlock()
	r := n.replicas[name]
	if r == nil {
		if reason := in.s.reserve(n, replicaOverhead, false); reason != "" {
			in.reject(reason, resourcePoints(rm))
			return
		}
		r = &replica{name: name, pod: pod, series: map[string]*series{}}
		n.replicas[name] = r
	}
	r.workload = workloadOf(attrs, r.workload)
	for _, sm := range rm.GetScopeMetrics() {
		for _, m := range sm.GetMetrics() {
			in.metric(n, r, m)
		}
	}
	if len(r.series) == 0 {
		delete(n.replicas, name)
		in.s.release(n, replicaOverhead)
	}
}

// workloadOf reads the workload attributes, reusing prev when they are
// unchanged (the common case: one replica pushes the same resource).
func workloadOf(attrs []*commonpb.KeyValue, prev map[string]string) map[string]string {
	same := prev != nil
	count := 0
	for _, kv := range attrs {
		if slices.Contains(WorkloadAttributes, kv.GetKey()) {
			count++
			if same && prev[kv.GetKey()] != kv.GetValue().GetStringValue() {
				same = false
			}
		}
	}
	if same && count == len(prev) {
		return prev
	}
	w := make(map[string]string, count)
	for _, kv := range attrs {
		if slices.Contains(WorkloadAttributes, kv.GetKey()) {
			w[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
	}
	return w
}

func stringAttr(attrs []*commonpb.KeyValue, key string) string {
	for _, kv := range attrs {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// noRecordedValue is OTLP's DataPointFlags.FLAG_NO_RECORDED_VALUE: the
// point marks a series that ended, and carries no value.
const noRecordedValue = uint32(metricspb.DataPointFlags_DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK)

func (in *ingest) metric(n *namespace, r *replica, m *metricspb.Metric) {
	name := m.GetName()
	switch {
	case m.GetGauge() != nil:
		for _, dp := range m.GetGauge().GetDataPoints() {
			in.number(n, r, name, Gauge, false, dp)
		}
	case m.GetSum() != nil:
		sum := m.GetSum()
		kind := Gauge
		if sum.GetIsMonotonic() {
			kind = Counter
		}
		delta := sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range sum.GetDataPoints() {
			in.number(n, r, name, kind, delta, dp)
		}
	case m.GetHistogram() != nil:
		h := m.GetHistogram()
		delta := h.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range h.GetDataPoints() {
			counts, bounds := dp.GetBucketCounts(), dp.GetExplicitBounds()
			if len(counts) > 0 && len(counts) != len(bounds)+1 || !sortedFinite(bounds) {
				in.reject(reasonBadBuckets, 1)
				continue
			}
			if len(counts) == 0 {
				bounds = nil
			}
			p := sample{v: dp.GetSum(), count: float64(dp.GetCount())}
			if len(counts) > 0 {
				p.buckets = make([]float64, len(counts))
				for i, c := range counts {
					p.buckets[i] = float64(c)
				}
			}
			in.point(n, r, name, dp.GetAttributes(), Histogram, delta, dp.GetTimeUnixNano(), dp.GetStartTimeUnixNano(), dp.GetFlags(), p, bounds)
		}
	case m.GetSummary() != nil:
		for _, dp := range m.GetSummary().GetDataPoints() {
			p := sample{v: dp.GetSum(), count: float64(dp.GetCount())}
			in.point(n, r, name, dp.GetAttributes(), Histogram, false, dp.GetTimeUnixNano(), dp.GetStartTimeUnixNano(), dp.GetFlags(), p, nil)
		}
	case m.GetExponentialHistogram() != nil:
		in.reject(reasonUnsupported, len(m.GetExponentialHistogram().GetDataPoints()))
	}
}

func sortedFinite(bounds []float64) bool {
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) || i > 0 && b <= bounds[i-1] {
			return false
		}
	}
	return true
}

func (in *ingest) number(n *namespace, r *replica, name string, kind Kind, delta bool, dp *metricspb.NumberDataPoint) {
	v := dp.GetAsDouble()
	if _, isInt := dp.GetValue().(*metricspb.NumberDataPoint_AsInt); isInt {
		v = float64(dp.GetAsInt())
	}
	in.point(n, r, name, dp.GetAttributes(), kind, delta, dp.GetTimeUnixNano(), dp.GetStartTimeUnixNano(), dp.GetFlags(), sample{v: v}, nil)
}

// point stores one data point. p holds the point's raw values.
func (in *ingest) point(n *namespace, r *replica, name string, attrs []*commonpb.KeyValue, kind Kind, delta bool, t, start uint64, flags uint32, p sample, bounds []float64) {
	switch {
	case flags&noRecordedValue != 0:
		in.ignore(reasonNoValue)
		return
	case t == 0 || t > math.MaxInt64:
		in.reject(reasonTimestamp, 1)
		return
	case int64(t) > in.future:
		in.reject(reasonFuture, 1)
		return
	}
	if reason := badValue(p.v, kind == Gauge && delta); reason != "" {
		in.reject(reason, 1)
		return
	}
	in.labels(name, attrs)
	x := r.series[string(in.key)]
	fresh := x == nil || x.kind != kind || kind == Histogram && !sameBounds(x.bounds, bounds)
	if delta {
		// A running total must stay a value too.
		total := p.v
		if !fresh {
			total += x.raw.v
		}
		if reason := badValue(total, false); reason != "" {
			in.reject(reason, 1)
			return
		}
	}
	if fresh {
		// A new series, or one whose type or buckets changed: it starts
		// over, and its cost is reserved anew.
		key := string(in.key)
		cost := in.s.seriesCost(key, kind, len(p.buckets))
		var old int64
		if x != nil {
			old = x.cost
		}
		if reason := in.s.reserve(n, cost-old, x == nil); reason != "" {
			in.reject(reason, 1)
			return
		}
		x = &series{metric: name, labels: slices.Clone(in.attrs), kind: kind, cost: cost}
		if len(p.buckets) > 0 {
			x.bounds = slices.Clone(bounds)
			x.raw.buckets = make([]float64, len(p.buckets))
			x.offset.buckets = make([]float64, len(p.buckets))
		}
		r.series[key] = x
	}
	// A point timed ahead of the receiver's clock, within the skew, is
	// stored as received: kept at its own time it would hold the series
	// ahead, and every on-time point after it would be out of order.
	ti, si, own := int64(t), int64(start), int64(t)
	retimed := ti > in.now
	if retimed {
		ti = in.now
	}
	switch {
	case own == x.lastOwn || ti == x.lastT:
		in.ignore(reasonDuplicate)
		return
	case ti < x.lastT:
		in.ignore(reasonOutOfOrder)
		return
	case delta && si != 0 && si < x.lastT && x.lastT != 0:
		// A delta overlapping what was already added: counting it would
		// count twice.
		in.ignore(reasonOutOfOrder)
		return
	}
	switch {
	case kind == Gauge && !delta:
		x.raw.v = p.v
	case delta:
		x.raw.v += p.v
		x.raw.count += p.count
		for i, c := range p.buckets {
			x.raw.buckets[i] += c
		}
	default: // cumulative counter or histogram
		restarted := x.lastT != 0 && si != 0 && x.start != 0 && si != x.start
		if x.lastT != 0 && (restarted || p.v < x.raw.v && kind == Counter || p.count < x.raw.count) {
			x.reset()
		}
		x.raw.v, x.raw.count = p.v, p.count
		copy(x.raw.buckets, p.buckets)
	}
	if x.lastT == 0 && si > 0 && si < ti {
		x.firstStart = si
	}
	x.lastT, x.lastOwn, x.start, x.touched = ti, own, si, in.now
	x.add(x.adjusted(ti), int64(in.s.opts.HistoryResolution), in.s.opts.HistoryPoints)
	r.newest = max(r.newest, ti)
	in.res.Accepted++
	if retimed {
		in.res.Retimed++
		in.ahead = max(in.ahead, own-in.now)
	}
}

// badValue is why a point's value (a gauge's, a counter's, a histogram's
// sum) cannot be stored, "" when it can: no pressure, count, limit or
// duration is NaN, infinite or negative. An increment of a delta
// UpDownCounter may be negative (increment); its running total may not.
func badValue(v float64, increment bool) string {
	switch {
	case math.IsNaN(v):
		return reasonNaN
	case math.IsInf(v, 0):
		return reasonInfinite
	case v < 0 && !increment:
		return reasonNegative
	}
	return ""
}

// labels sorts the point's attributes into in.attrs and encodes the series
// key, metric name and attributes, into in.key.
func (in *ingest) labels(name string, attrs []*commonpb.KeyValue) {
	in.attrs = in.attrs[:0]
	for _, kv := range attrs {
		if v, ok := attrString(kv.GetValue()); ok {
			in.attrs = append(in.attrs, Label{Name: kv.GetKey(), Value: v})
		}
	}
	slices.SortFunc(in.attrs, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	in.key = appendKey(in.key[:0], name, in.attrs)
}

// attrString reads an attribute value as a label value; arrays, maps and
// bytes are not label values and are left out.
func attrString(v *commonpb.AnyValue) (string, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue, true
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10), true
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64), true
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue), true
	}
	return "", false
}

// unixTime converts Unix nanoseconds.
func unixTime(ns int64) time.Time { return time.Unix(0, ns) }
