package body

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// ParseProto reads a filtered delimited protobuf body (filterProto)
// into series. It walks the wire format of io.prometheus.client.MetricFamily
// with protowire and keeps only what ReadSample looks at, instead of
// unmarshalling every family into client_model's messages. It takes and
// refuses what expfmt's decoder does: the proto2 rules for the fields it
// reads (the last value of a field wins; a message field given twice is
// merged; a field of the wrong wire type is an unknown field), every nested
// message checked as the protobuf runtime checks it, and expfmt's checks of
// names (non-empty, valid UTF-8) and label values (valid UTF-8).
// FuzzProtoParseAgreement holds the two to the same series.
//
// limit bounds the series of all families (0: none), counted as expfmt's
// families would hold them.
func ParseProto(b []byte, f *Families, limit int, dst []Series) ([]Series, error) {
	total := 0
	for len(b) > 0 {
		size, n := protowire.ConsumeVarint(b)
		if n < 0 || size > uint64(len(b)-n) {
			return dst, errors.New("parse protobuf exposition: truncated message")
		}
		msg := b[n : n+int(size)]
		b = b[n+int(size):]
		start := len(dst)
		var name []byte
		var err error
		it := fieldIter{b: msg}
		for it.next() {
			w := it.w
			switch {
			case w.num == 1 && w.typ == protowire.BytesType:
				name = w.b
			case w.num == 4 && w.typ == protowire.BytesType:
				if dst, err = readMetric(w.b, dst); err != nil {
					return dst, fmt.Errorf("parse protobuf exposition: %w", err)
				}
			}
		}
		if it.err != nil {
			return dst, fmt.Errorf("parse protobuf exposition: %w", it.err)
		}
		if len(name) == 0 || !utf8.Valid(name) {
			return dst, fmt.Errorf("parse protobuf exposition: invalid metric name %q", name)
		}
		// One family at a time, each bounded by the body's bytes: the
		// count stops the parse before the series pile up.
		if total += len(dst) - start; limit > 0 && total > limit {
			return dst, fmt.Errorf("%w (more than %d: seriesLimit)", ErrTooManySeries, limit)
		}
		fam, ok := f.index[string(name)]
		if !ok {
			dst = dst[:start]
			continue
		}
		for i := start; i < len(dst); i++ {
			dst[i].family = fam
		}
	}
	return dst, nil
}

// readMetric reads one io.prometheus.client.Metric and appends its series.
func readMetric(b []byte, dst []Series) ([]Series, error) {
	s := Series{}
	var seen uint8 // the labels read so far: the first of a name counts
	var gauge, counter, untyped, histogram, summary struct {
		present bool
		v       float64
	}
	var hist, summ aggregate
	it := fieldIter{b: b}
	for it.next() {
		w := it.w
		var err error
		if w.typ == protowire.BytesType {
			switch w.num {
			case 1:
				err = readLabelPair(w.b, &s, &seen)
			case 2:
				gauge.present = true
				err = readValue(w.b, &gauge.v, nil)
			case 3:
				counter.present = true
				err = readValue(w.b, &counter.v, counterSpec)
			case 4:
				summary.present = true
				err = summ.read(w.b, summarySpec, false)
			case 5:
				untyped.present = true
				err = readValue(w.b, &untyped.v, nil)
			case 7:
				histogram.present = true
				err = hist.read(w.b, histogramSpec, true)
			}
		}
		if err != nil {
			return dst, err
		}
	}
	if it.err != nil {
		return dst, it.err
	}
	switch {
	case gauge.present:
		s.hasValue, s.value = true, gauge.v
	case counter.present:
		s.hasValue, s.value = true, counter.v
	case untyped.present:
		s.hasValue, s.value = true, untyped.v
	}
	switch {
	case histogram.present:
		s.agg, s.sum, s.count = aggHistogram, hist.sum, float64(hist.count)
		if hist.hasCountFloat {
			s.count = hist.countFloat
		}
	case summary.present:
		s.agg, s.sum, s.count = aggSummary, summ.sum, float64(summ.count)
	}
	return append(dst, s), nil
}

// readLabelPair reads one label; a name the contract reads is kept the
// first time it appears, as expfmt's families would give it first.
func readLabelPair(b []byte, s *Series, seen *uint8) error {
	var name, value []byte
	it := fieldIter{b: b}
	for it.next() {
		if w := it.w; w.typ == protowire.BytesType {
			switch w.num {
			case 1:
				name = w.b
			case 2:
				value = w.b
			}
		}
	}
	if it.err != nil {
		return it.err
	}
	if !utf8.Valid(value) {
		return fmt.Errorf("invalid label value %q", value)
	}
	if len(name) == 0 || !utf8.Valid(name) {
		return fmt.Errorf("invalid label name %q", name)
	}
	if k := readLabel(name); k >= 0 && *seen&(1<<k) == 0 {
		s.labels[k], *seen = string(value), *seen|1<<k
	}
	return nil
}

// readValue reads field 1, a double, of a Gauge, Counter or Untyped.
func readValue(b []byte, v *float64, spec msgSpec) error {
	it := fieldIter{b: b}
	for it.next() {
		w := it.w
		if w.num == 1 && w.typ == protowire.Fixed64Type {
			*v = math.Float64frombits(w.v)
		} else if err := spec.check(w); err != nil {
			return err
		}
	}
	return it.err
}

// aggregate is a Histogram's or Summary's count and sum.
type aggregate struct {
	count         uint64
	sum           float64
	countFloat    float64 // a Histogram's sample_count_float
	hasCountFloat bool
}

func (a *aggregate) read(b []byte, spec msgSpec, histogram bool) error {
	it := fieldIter{b: b}
	for it.next() {
		w := it.w
		switch {
		case w.num == 1 && w.typ == protowire.VarintType:
			a.count = w.v
		case w.num == 2 && w.typ == protowire.Fixed64Type:
			a.sum = math.Float64frombits(w.v)
		case w.num == 4 && w.typ == protowire.Fixed64Type && histogram:
			a.countFloat, a.hasCountFloat = math.Float64frombits(w.v), true
		default:
			if err := spec.check(w); err != nil {
				return err
			}
		}
	}
	return it.err
}

// wireField is one field as read off the wire: v holds a varint or fixed
// value, b a length-delimited one.
type wireField struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// fieldIter walks a message's fields, checking the wire format as the
// protobuf runtime does when it unmarshals: a bad tag, a field number out of
// range, a stray end-group, a truncated value or an unbalanced group is an
// error, in err once next returns false.
type fieldIter struct {
	b   []byte
	w   wireField
	err error
}

func (it *fieldIter) next() bool {
	if len(it.b) == 0 || it.err != nil {
		return false
	}
	num, typ, n := protowire.ConsumeTag(it.b)
	if n < 0 || num > protowire.MaxValidNumber {
		it.err = errors.New("bad field tag")
		return false
	}
	b := it.b[n:]
	it.w = wireField{num: num, typ: typ}
	switch typ {
	case protowire.VarintType:
		it.w.v, n = protowire.ConsumeVarint(b)
	case protowire.Fixed64Type:
		it.w.v, n = protowire.ConsumeFixed64(b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(b)
		it.w.v = uint64(v)
	case protowire.BytesType:
		it.w.b, n = protowire.ConsumeBytes(b)
	case protowire.StartGroupType:
		n = protowire.ConsumeFieldValue(num, typ, b)
	default: // an end-group without its start, or a reserved wire type
		it.err = fmt.Errorf("field %d: unexpected wire type %d", num, typ)
		return false
	}
	if n < 0 {
		it.err = fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		return false
	}
	it.b = b[n:]
	return true
}

// msgSpec is what the protobuf runtime checks in a message's fields beyond
// their wire format: the nested messages and packed fields of
// client_model's schema. Scalar fields need nothing more; a field of the
// wrong wire type is an unknown field, which needs nothing more either.
type msgSpec map[protowire.Number]fieldSpec

type fieldSpec struct {
	packed packing // for a packed repeated field: its elements' encoding
	msg    msgSpec // for a message field: its schema (nil: scalars only)
}

type packing uint8

const (
	notPacked packing = iota
	packedVarints
	packedFixed64s
)

// check checks a field of a message of this schema.
func (s msgSpec) check(w wireField) error {
	f, ok := s[w.num]
	switch {
	case !ok:
		return nil
	case f.packed != notPacked:
		if w.typ != protowire.BytesType {
			return nil // unpacked, already read, or unknown
		}
		for b := w.b; len(b) > 0; {
			var n int
			if f.packed == packedVarints {
				_, n = protowire.ConsumeVarint(b)
			} else {
				_, n = protowire.ConsumeFixed64(b)
			}
			if n < 0 {
				return fmt.Errorf("packed field %d: %w", w.num, protowire.ParseError(n))
			}
			b = b[n:]
		}
		return nil
	case w.typ != protowire.BytesType:
		return nil // unknown
	}
	return checkMessage(w.b, f.msg)
}

// checkMessage checks a nested message the source does not read.
func checkMessage(b []byte, spec msgSpec) error {
	it := fieldIter{b: b}
	for it.next() {
		if err := spec.check(it.w); err != nil {
			return err
		}
	}
	return it.err
}

// client_model's messages (io.prometheus.client), by field number.
var (
	scalarsSpec  = msgSpec{}                                              // LabelPair, Timestamp, Quantile, BucketSpan
	exemplarSpec = msgSpec{1: {msg: scalarsSpec}, 3: {msg: scalarsSpec}}  // labels, timestamp
	counterSpec  = msgSpec{2: {msg: exemplarSpec}, 3: {msg: scalarsSpec}} // exemplar, created
	summarySpec  = msgSpec{3: {msg: scalarsSpec}, 4: {msg: scalarsSpec}}  // quantiles, created
	bucketSpec   = msgSpec{3: {msg: exemplarSpec}}
	// histogramSpec: buckets, spans, deltas and counts (packed), created,
	// exemplars.
	histogramSpec = msgSpec{
		3: {msg: bucketSpec}, 9: {msg: scalarsSpec}, 12: {msg: scalarsSpec},
		10: {packed: packedVarints}, 13: {packed: packedVarints},
		11: {packed: packedFixed64s}, 14: {packed: packedFixed64s},
		15: {msg: scalarsSpec}, 16: {msg: exemplarSpec},
	}
)
