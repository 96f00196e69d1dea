package exposition

import (
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// op is one fuzzed fold call: a series of kind for replica (and label),
// or, with end set, the end of a sample after advance.
type op struct {
	kind    QueueKind
	replica string
	label   string
	v       float64
	end     bool
	advance time.Duration
}

// decodeOps reads a fuzz input as fold calls. Each call is a header byte:
// bits 0-1 the replica (or label), bits 2-5 the kind (11 and above end the
// sample), bits 6-7 how the value is spelled: 8 raw float64 bytes, or one
// byte as a small whole number, a quarter or a tenth, the values whose
// float sums round. Ending a sample reads one byte of minutes to advance,
// so replicas can outlive CounterTTL.
func decodeOps(data []byte) []op {
	var out []op
	for len(data) > 0 {
		h := data[0]
		data = data[1:]
		name := string(rune('a' + h&3))
		kind := QueueKind(h >> 2 & 15)
		if kind > KindReservationSlots {
			o := op{end: true, advance: time.Minute}
			if len(data) > 0 {
				o.advance = time.Duration(data[0]) * time.Minute
				data = data[1:]
			}
			out = append(out, o)
			continue
		}
		var v float64
		switch h >> 6 {
		case 0:
			if len(data) < 8 {
				return out
			}
			v = math.Float64frombits(binary.LittleEndian.Uint64(data))
			data = data[8:]
		default:
			if len(data) < 1 {
				return out
			}
			v = float64(data[0]) / [4]float64{1, 1, 4, 10}[h>>6]
			data = data[1:]
		}
		out = append(out, op{kind: kind, replica: name, label: name, v: v})
	}
	return out
}

func encodeOp(kind QueueKind, replica int, v float64) []byte {
	b := []byte{byte(kind)<<2 | byte(replica)}
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func endSample(minutes byte) []byte { return []byte{15 << 2, minutes} }

// FuzzQueueFold folds fuzzed samples twice, once with each sample's series
// reversed, and checks what the queue policy relies on: the counters never
// fall, are finite and >= 0, and do not depend on the order the series came
// in; every gauge and reservation is finite and >= 0.
func FuzzQueueFold(f *testing.F) {
	var seed []byte
	seed = append(seed, encodeOp(KindArrivals, 0, 5)...)
	seed = append(seed, endSample(1)...)
	seed = append(seed, encodeOp(KindArrivals, 0, 5)...)
	seed = append(seed, encodeOp(KindArrivals, 2, 1e300)...) // a late newcomer cancelled a
	seed = append(seed, endSample(1)...)
	f.Add(seed)
	seed = nil
	for i, v := range []float64{0.1, 0.2, 0.3, 1e16, 1, 1} {
		seed = append(seed, encodeOp(KindRunSeconds, i%3, v)...)
	}
	seed = append(seed, endSample(1)...)
	seed = append(seed, encodeOp(KindRunSeconds, 1, 0.7)...)
	seed = append(seed, endSample(11)...)
	seed = append(seed, encodeOp(KindReady, 1, math.MaxFloat64)...)
	seed = append(seed, encodeOp(KindReady, 1, math.MaxFloat64)...)
	seed = append(seed, encodeOp(KindReservationEnd, 3, 0)...)
	seed = append(seed, encodeOp(KindReservationSlots, 3, math.Inf(1))...)
	f.Add(seed)
	f.Add([]byte{0x80 | 0<<2 | 1, 3, 0x40 | 2<<2, 7, 15 << 2, 0, 0xc0 | 1<<2 | 3, 255})

	f.Fuzz(func(t *testing.T, data []byte) {
		ops := decodeOps(data)
		var forward, backward QueueCounters
		var prev [3]float64
		at := t0
		var sample []op
		settle := func(advance time.Duration) {
			var a, b QueueFold
			for _, o := range sample {
				a.Add(o.kind, o.replica, o.label, o.v)
			}
			for _, o := range slices.Backward(sample) {
				b.Add(o.kind, o.replica, o.label, o.v)
			}
			qa, qb := a.Observation(&forward, at), b.Observation(&backward, at)
			sample = sample[:0]
			at = at.Add(advance)
			if (qa == nil) != (qb == nil) {
				t.Fatalf("order changed whether there is a queue: %+v vs %+v", qa, qb)
			}
			if qa == nil {
				return
			}
			got := [3]float64{qa.Arrivals, qa.RunSeconds, qa.Runs}
			if rev := [3]float64{qb.Arrivals, qb.RunSeconds, qb.Runs}; got != rev {
				t.Fatalf("counters depend on the series' order: %v vs %v", got, rev)
			}
			for i, v := range got {
				if !finite(v) || v < prev[i] {
					t.Fatalf("counter %d: %v after %v", i, v, prev[i])
				}
			}
			prev = got
			checkGauges(t, qa)
		}
		for _, o := range ops {
			if o.end {
				settle(o.advance)
				continue
			}
			sample = append(sample, o)
		}
		settle(time.Minute)
	})
}

func finite(v float64) bool { return v >= 0 && v <= math.MaxFloat64 }

func checkGauges(t *testing.T, q *pressure.QueueObservation) {
	t.Helper()
	for _, v := range []float64{q.Due, q.Busy} {
		if !finite(v) {
			t.Fatalf("gauge %v in %+v", v, q)
		}
	}
	for _, b := range q.Backlog {
		if !finite(b.Ready) || !finite(b.Retrying) {
			t.Fatalf("backlog %+v", b)
		}
	}
	if !slices.IsSortedFunc(q.Backlog, func(a, b pressure.ClassBacklog) int { return strings.Compare(a.Class, b.Class) }) {
		t.Fatalf("backlog not sorted: %+v", q.Backlog)
	}
	for _, r := range q.Reservations {
		if !(r.Slots > 0) || !finite(r.Slots) {
			t.Fatalf("reservation %+v", r)
		}
	}
}

// FuzzTreeFold folds fuzzed storage reports in order and reversed: the
// view must not depend on the order (both sources feed the fold in their
// own order), and must hold what TreeFold promises.
func FuzzTreeFold(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add(append([]byte{0x10}, binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN()))...))
	f.Add([]byte{0x33, 0xff, 0xff, 0x0f, 0x37, 0x00, 0x10, 0x02})
	f.Fuzz(func(t *testing.T, data []byte) {
		type report struct {
			kind      byte
			tree      string
			v         float64
			partition int
			account   string
		}
		var reports []report
		for len(data) > 0 {
			h := data[0]
			data = data[1:]
			r := report{kind: h >> 4 & 3, tree: string(rune('a' + h&3))}
			switch r.kind {
			case 0, 1: // retained, ceiling
				if len(data) < 8 {
					data = nil
					continue
				}
				r.v = math.Float64frombits(binary.LittleEndian.Uint64(data))
				data = data[8:]
			case 2: // saturation
				r.v = float64(h >> 2 & 3)
			case 3: // placement: two bytes of partition, the account
				if len(data) < 2 {
					data = nil
					continue
				}
				r.partition = int(int16(binary.LittleEndian.Uint16(data)))
				r.account = string(rune('p' + h>>2&3))
				data = data[2:]
			}
			reports = append(reports, r)
		}
		fold := func(rs []report) []pressure.TreeObservation {
			var f TreeFold
			for _, r := range rs {
				switch r.kind {
				case 0:
					f.Retained(r.tree, r.v)
				case 1:
					f.Ceiling(r.tree, r.v)
				case 2:
					f.Saturation(r.tree, pressure.WalSaturationState(r.v))
				case 3:
					f.Place(r.tree, r.partition, r.account)
				}
			}
			return f.Trees()
		}
		got := fold(reports)
		rev := slices.Clone(reports)
		slices.Reverse(rev)
		if rev := fold(rev); !reflect.DeepEqual(got, rev) {
			t.Fatalf("the view depends on the order:\n%+v\n%+v", got, rev)
		}
		if len(reports) == 0 && got != nil {
			t.Fatalf("no reports, view %+v", got)
		}
		for i, tr := range got {
			if i > 0 && got[i-1].Tree >= tr.Tree {
				t.Fatalf("trees not sorted and unique: %+v", got)
			}
			if tr.RetainedBytes < 0 || tr.RetainedBytesCeiling < 0 || len(tr.PartitionAccounts) > MaxPartitions {
				t.Fatalf("tree %+v", tr)
			}
		}
	})
}
