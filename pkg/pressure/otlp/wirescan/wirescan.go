// Package wirescan reads what an OTLP metrics request would cost before it
// is decoded: its resources, scopes, metrics and data points, and what
// proto.Unmarshal would allocate for it, from its wire form with protowire
// and allocating nothing (a JSON body is bounded more coarsely). The
// receiver refuses a push on the scan's word, before decoding it.
package wirescan

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// A request's bytes say little of its memory: 4 MiB of empty
// ResourceMetrics decode into about 150 MB. So a body is scanned in its
// wire form before it is decoded, and refused when it holds more
// resources, scopes, metrics or data points than allowed, or would decode
// into more than MaxDecodedBytes. The scan walks the OTLP schema with
// protowire, allocating nothing; its estimate counts every allocation
// proto.Unmarshal makes, rounded up (TestScanEstimateBoundsTheDecode).

// MaxDepth bounds a request's nesting (the scan's and the decoders'): an
// OTLP request is 9 messages deep to an attribute's value, and nested
// attribute values are rare.
const MaxDepth = 32

// Tally is what a request holds.
type Tally struct {
	Resources, Scopes, Metrics, Points int
	// Decoded is the estimated bytes the decode allocates.
	Decoded int64
}

// role says which of Tally's counts a message adds to.
type role int

const (
	roleNone role = iota
	roleResource
	roleScope
	roleMetric
	rolePoint
)

// shape is what the scan knows of one message type.
type shape struct {
	size   int64        // the decoded struct's allocation
	role   role         // the count it adds to
	fields []fieldShape // by field number; a zero fieldShape is unknown
}

type fieldShape struct {
	known    bool
	kind     protoreflect.Kind
	msg      *shape // for a message field
	repeated bool
	oneof    bool // set through a wrapper struct or a pointer (proto3 optional), allocated apart
}

// requestShape is ExportMetricsServiceRequest's, built once from the
// registered descriptors.
var requestShape, largestMessage = buildShapes()

func buildShapes() (*shape, int64) {
	shapes := map[protoreflect.FullName]*shape{}
	var largest int64
	var build func(md protoreflect.MessageDescriptor) *shape
	build = func(md protoreflect.MessageDescriptor) *shape {
		if s, ok := shapes[md.FullName()]; ok {
			return s
		}
		s := &shape{}
		shapes[md.FullName()] = s
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
		if err != nil {
			panic(fmt.Sprintf("otlp scan: %s is not registered: %v", md.FullName(), err))
		}
		s.size = int64(reflect.TypeOf(mt.Zero().Interface()).Elem().Size())
		largest = max(largest, s.size)
		switch md.FullName() {
		case "opentelemetry.proto.metrics.v1.ResourceMetrics":
			s.role = roleResource
		case "opentelemetry.proto.metrics.v1.ScopeMetrics":
			s.role = roleScope
		case "opentelemetry.proto.metrics.v1.Metric":
			s.role = roleMetric
		case "opentelemetry.proto.metrics.v1.NumberDataPoint", "opentelemetry.proto.metrics.v1.HistogramDataPoint",
			"opentelemetry.proto.metrics.v1.ExponentialHistogramDataPoint", "opentelemetry.proto.metrics.v1.SummaryDataPoint":
			s.role = rolePoint
		}
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			n := int(fd.Number())
			if n >= len(s.fields) {
				s.fields = append(s.fields, make([]fieldShape, n+1-len(s.fields))...)
			}
			if fd.IsList() && n > maxListField {
				panic(fmt.Sprintf("otlp scan: %s's list field %d is past maxListField", md.FullName(), n))
			}
			f := fieldShape{known: true, kind: fd.Kind(), repeated: fd.IsList(), oneof: fd.ContainingOneof() != nil}
			if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
				f.msg = build(fd.Message())
			}
			s.fields[n] = f
		}
		return s
	}
	req := build((&colmetrics.ExportMetricsServiceRequest{}).ProtoReflect().Descriptor())
	return req, largest
}

// decodeOverhead is what a decode allocates besides the request's own
// messages, with room.
const decodeOverhead = 4 << 10

// wrapper is a oneof's wrapper struct, or a proto3 optional's pointer.
const wrapper = 16

// sizeClasses are the Go allocator's size classes for small objects.
var sizeClasses = [...]int64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384,
	416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864,
	5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576,
	27264, 28672, 32768}

// alloc is what allocating n bytes takes.
func alloc(n int64, pointers bool) int64 {
	a, _ := roundUp(n, pointers)
	return a
}

// roundUp is the allocation n bytes take, a size class or whole pages,
// and how much of it holds data: a small object of pointers over 512
// bytes carries an 8-byte header.
func roundUp(n int64, pointers bool) (allocated, usable int64) {
	if n <= 0 {
		return 0, 0
	}
	req := n
	if req > sizeClasses[len(sizeClasses)-1]-8 {
		pages := (req + 8191) &^ 8191
		return pages, pages
	}
	if pointers && req > 512 {
		req += 8
	}
	i, _ := slices.BinarySearch(sizeClasses[:], req)
	return sizeClasses[i], sizeClasses[i] - (req - n)
}

// list is a slice the decode appends to, one element or one run of bytes
// at a time, grown as append grows it: its every backing array counts.
type list struct{ n, cap int64 }

func (l *list) append(k, elem int64, pointers bool) int64 {
	l.n += k
	if l.n <= l.cap {
		return 0
	}
	c := l.cap
	switch {
	case l.n > 2*c:
		c = l.n
	case c < 256:
		c *= 2
	default:
		for c < l.n {
			c += (c + 768) / 4
		}
	}
	allocated, usable := roundUp(c*elem, pointers)
	l.cap = usable / elem
	return allocated
}

// grow is a packed list's decode: room for k more made at once.
func (l *list) grow(k, elem int64) int64 {
	l.n += k
	if l.n <= l.cap {
		return 0
	}
	allocated, usable := roundUp(l.n*elem, false)
	l.cap = usable / elem
	return allocated
}

// maxListField bounds the field numbers of the repeated fields the scan
// follows list by list (OTLP's go up to 12).
const maxListField = 15

var (
	errMalformed = errors.New("not an OTLP ExportMetricsServiceRequest in the protobuf wire format")
	// ErrTooDeep refuses a body nested deeper than MaxDepth, which the
	// decoders would refuse as well.
	ErrTooDeep = fmt.Errorf("nested deeper than %d messages", MaxDepth)
)

// Proto tallies a protobuf ExportMetricsServiceRequest without
// decoding it. An error says it would not decode.
func Proto(b []byte) (Tally, error) {
	t := Tally{Decoded: decodeOverhead}
	err := t.message(b, requestShape, 0)
	return t, err
}

func (t *Tally) message(b []byte, s *shape, depth int) error {
	if depth > MaxDepth {
		return ErrTooDeep
	}
	t.Decoded += alloc(s.size, true)
	switch s.role {
	case roleResource:
		t.Resources++
	case roleScope:
		t.Scopes++
	case roleMetric:
		t.Metrics++
	case rolePoint:
		t.Points++
	}
	var lists [maxListField + 1]list
	var unknown list
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformed
		}
		tagLen := n
		b = b[n:]
		var f fieldShape
		if int(num) < len(s.fields) {
			f = s.fields[num]
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return errMalformed
		}
		value := b[:n]
		b = b[n:]
		if !f.known || !wireFits(f, typ) {
			// Kept as unknown bytes: the tag, then the value, appended.
			t.Decoded += unknown.append(int64(tagLen), 1, false) + unknown.append(int64(len(value)), 1, false)
			continue
		}
		if f.oneof {
			t.Decoded += wrapper
		}
		packed := typ == protowire.BytesType && f.msg == nil && f.kind != protoreflect.StringKind && f.kind != protoreflect.BytesKind
		if f.repeated && !packed {
			t.Decoded += lists[num].append(1, 8, f.msg != nil)
		}
		if typ != protowire.BytesType {
			continue
		}
		v, _ := protowire.ConsumeBytes(value)
		switch {
		case f.msg != nil:
			if err := t.message(v, f.msg, depth+1); err != nil {
				return err
			}
		case packed:
			t.Decoded += lists[num].grow(int64(packedCount(f.kind, v)), 8)
		default: // a string or bytes, copied
			t.Decoded += alloc(int64(len(v)), false)
		}
	}
	return nil
}

// wireFits says a field arrived in a wire type its kind decodes from; a
// field that does not is kept as unknown.
func wireFits(f fieldShape, typ protowire.Type) bool {
	switch f.kind {
	case protoreflect.MessageKind, protoreflect.StringKind, protoreflect.BytesKind:
		return typ == protowire.BytesType
	case protoreflect.GroupKind:
		return typ == protowire.StartGroupType
	case protoreflect.DoubleKind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return typ == protowire.Fixed64Type || f.repeated && typ == protowire.BytesType
	case protoreflect.FloatKind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return typ == protowire.Fixed32Type || f.repeated && typ == protowire.BytesType
	default: // varints
		return typ == protowire.VarintType || f.repeated && typ == protowire.BytesType
	}
}

// packedCount is the elements of a packed list, rounded up.
func packedCount(kind protoreflect.Kind, v []byte) int {
	switch kind {
	case protoreflect.DoubleKind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return (len(v) + 7) / 8
	case protoreflect.FloatKind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return (len(v) + 3) / 4
	}
	n := 0
	for _, c := range v {
		if c < 0x80 {
			n++
		}
	}
	return n + 1
}

// JSON bounds what an OTLP/JSON body decodes into, without decoding
// it: every object is a message (at most the largest OTLP one, set
// through a oneof), every array element costs what a number in a list
// does, every string byte is copied twice. Its counts come from the
// decoded request (Count).
func JSON(b []byte) (int64, error) {
	var objects, elements, strBytes int64
	var arrays [2*MaxDepth + 3]bool // whether each open container is an array
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			strBytes++
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth == len(arrays) {
				return 0, ErrTooDeep
			}
			if depth > 0 && arrays[depth-1] {
				elements++
			}
			if c == '{' {
				objects++
			}
			arrays[depth] = c == '['
			depth++
		case c == '}' || c == ']':
			depth = max(depth-1, 0)
		case c == ',' && depth > 0 && arrays[depth-1]:
			elements++
		}
	}
	// An array element costs up to 80 bytes to decode (a number in a
	// list: its token, its value and the list's growth), 90 under the
	// race detector.
	const perElement = 96
	perObject := alloc(largestMessage, true) + wrapper
	return decodeOverhead + objects*perObject + (elements+1)*perElement + 2*strBytes, nil
}

// Count tallies a decoded request's counts (not its memory).
func Count(req *colmetrics.ExportMetricsServiceRequest) Tally {
	var t Tally
	for _, rm := range req.GetResourceMetrics() {
		t.Resources++
		for _, sm := range rm.GetScopeMetrics() {
			t.Scopes++
			t.Metrics += len(sm.GetMetrics())
		}
	}
	t.Points = store.CountPoints(req.GetResourceMetrics())
	return t
}
