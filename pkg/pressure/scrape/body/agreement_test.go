package body

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// The parsers (textparse.go, protoparse.go) read the filtered body into
// series without expfmt. expfmt stays the reference: these targets parse
// the same filtered bodies both ways and require the same series, and
// (protobuf) the same verdict; the text parser may hand a body to expfmt,
// but never take one expfmt refuses.

// expfmtProto decodes a delimited protobuf body with expfmt, the reference
// for ParseProto; limit bounds the series as ParseProto does.
func expfmtProto(buf *bytes.Buffer, limit int) (map[string]*dto.MetricFamily, error) {
	format := expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.NoEscaping)
	dec := expfmt.NewDecoder(bytes.NewReader(buf.Bytes()), format)
	fams := map[string]*dto.MetricFamily{}
	n := 0
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return fams, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parse protobuf exposition: %w", err)
		}
		if n += len(mf.Metric); limit > 0 && n > limit {
			return nil, ErrTooManySeries
		}
		if prev, ok := fams[mf.GetName()]; ok {
			prev.Metric = append(prev.Metric, mf.Metric...)
			continue
		}
		fams[mf.GetName()] = mf
	}
}

func testFamilies() *Families {
	_, f := fuzzWant()
	return f
}

// byFamily orders series by family, keeping each family's own order, the
// only order ReadSample depends on.
func byFamily(ss []Series) []Series {
	ss = slices.Clone(ss)
	slices.SortStableFunc(ss, func(a, b Series) int { return a.family - b.family })
	return ss
}

// sameSeries compares series, a NaN equal to itself.
func sameSeries(a, b []Series) bool {
	a, b = byFamily(a), byFamily(b)
	return slices.EqualFunc(a, b, func(x, y Series) bool {
		same := func(p, q float64) bool { return math.Float64bits(p) == math.Float64bits(q) }
		return x.family == y.family && x.hasValue == y.hasValue && same(x.value, y.value) &&
			x.agg == y.agg && same(x.sum, y.sum) && same(x.count, y.count) && x.labels == y.labels
	})
}

func textAgreementSeeds(f *testing.F) {
	textSeeds(f)
	for _, s := range []string{
		"# HELP barometer_activations Working\\nset \\\\ \\\"x\\\".\n# TYPE barometer_activations GAUGE\nbarometer_activations{tree=\"a\\\"b\",class=\"\\\\\\n\"} 3 1700000000000\n",
		"barometer_activations {  tree = \"t\" , } -Inf\nbarometer_activations{}+1\n",
		"barometer_wal_tree_retained_bytes{tree=\"t\",tree=\"u\"} 1\n",
		"barometer_activations{__name__=\"x\"} 1\n",
		"barometer_activations 1 \n",
		"barometer_activations 1 2 \n",
		"barometer_activations 0x1p3\n",
		"barometer_activations 1_0\n",
		"barometer_activations 1e999\n",
		"barometer_activations 1\n# TYPE barometer_activations gauge\n",
		"# HELP barometer_activations a\n# HELP barometer_activations b\n",
		"# TYPE barometer_activations gauge \n",
		"# TYPE barometer_activations  \nbarometer_activations 1\n",
		"# TYPE barometer_queue_run_duration_seconds summary\nbarometer_queue_run_duration_seconds{quantile=\"0.5\"} 1\nbarometer_queue_run_duration_seconds_sum 2\nbarometer_queue_run_duration_seconds_count 3\n",
		"barometer_queue_run_duration_seconds_sum 2\n# TYPE barometer_queue_run_duration_seconds histogram\nbarometer_queue_run_duration_seconds_sum 4\n",
		"barometer_wal_partition_account{tree=\"t\",partition=\"7\",account=\"\xff\"} 1\n",
		"barometer_activations\"x\" 1\n",
		"barometer_activations 1",
		"   \n\t\n",
	} {
		f.Add([]byte(s))
	}
}

// FuzzTextParseAgreement: where parseTextSeries takes a filtered text body,
// expfmt parses it too, to the same series.
func FuzzTextParseAgreement(f *testing.F) {
	textAgreementSeeds(f)
	_, fams := fuzzWant()
	f.Fuzz(func(t *testing.T, body []byte) {
		var buf bytes.Buffer
		if err := filterText(bufio.NewReaderSize(bytes.NewReader(body), ReaderSize), &buf, fams.index); err != nil {
			return
		}
		got, ok := parseTextSeries(buf.Bytes(), fams, nil)
		if !ok {
			return
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		ref, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("taken, but expfmt refuses it: %v\nbody: %q", err, buf.String())
		}
		if want := fromFamilies(ref, fams, nil); !sameSeries(got, want) {
			t.Fatalf("series differ\nbody: %q\n got %+v\nwant %+v", buf.String(), got, want)
		}
	})
}

// FuzzProtoParseAgreement: ParseProto and expfmt's decoder take and
// refuse the same filtered protobuf bodies, and read the same series.
func FuzzProtoParseAgreement(f *testing.F) {
	for _, b := range fuzzBodies(f, expfmt.TypeProtoDelim) {
		f.Add(b)
	}
	for _, mf := range protoSeeds() {
		f.Add(mf)
	}
	_, fams := fuzzWant()
	f.Fuzz(func(t *testing.T, body []byte) {
		if !framed(body) {
			return // expfmt would allocate what a prefix announces
		}
		var buf bytes.Buffer
		if err := filterProto(bufio.NewReaderSize(bytes.NewReader(body), ReaderSize), &buf, fams.index, math.MaxInt64); err != nil {
			return
		}
		got, err := ParseProto(buf.Bytes(), fams, 0, nil)
		ref, refErr := expfmtProto(bytes.NewBuffer(buf.Bytes()), 0)
		switch {
		case (err == nil) != (refErr == nil):
			t.Fatalf("verdicts differ: %v, expfmt %v\nbody: %x", err, refErr, buf.Bytes())
		case err != nil:
			return
		}
		if want := fromFamilies(ref, fams, nil); !sameSeries(got, want) {
			t.Fatalf("series differ\nbody: %x\n got %+v\nwant %+v", buf.Bytes(), got, want)
		}
	})
}

// protoSeeds are delimited bodies that reach the merge, presence and
// schema rules: a family named twice, a gauge given twice, a histogram's
// float count, a metric with a value and a histogram, nested messages.
func protoSeeds() [][]byte {
	delim := func(msgs ...[]byte) []byte {
		var out []byte
		for _, m := range msgs {
			out = protowire.AppendBytes(out, m)
		}
		return out
	}
	field := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	double := func(num protowire.Number, v float64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), math.Float64bits(v))
	}
	cat := func(bs ...[]byte) []byte { return slices.Concat(bs...) }
	name := func(s string) []byte { return field(1, []byte(s)) }
	label := func(n, v string) []byte { return field(1, cat(field(1, []byte(n)), field(2, []byte(v)))) }
	gauge := func(v float64) []byte { return field(2, double(1, v)) }
	mf := func(s string, metrics ...[]byte) []byte {
		out := name(s)
		for _, m := range metrics {
			out = cat(out, field(4, m))
		}
		return out
	}
	hist := field(7, cat(protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 3), double(2, 1.5), double(4, 2.5),
		field(3, cat(double(2, 1), field(3, label("a", "b")))), field(10, protowire.AppendVarint(nil, 7))))
	typed := &dto.MetricFamily{Name: proto.String(exposition.QueueRunDuration), Type: dto.MetricType_SUMMARY.Enum(),
		Metric: []*dto.Metric{{Summary: &dto.Summary{SampleCount: proto.Uint64(4), SampleSum: proto.Float64(2)}}}}
	marshalled, _ := proto.Marshal(typed)
	return [][]byte{
		delim(mf(exposition.Activations, cat(gauge(1), gauge(2)), cat(label("tree", "t"), label("tree", "u"), gauge(3)))),
		delim(mf(exposition.Activations, gauge(1)), mf(exposition.Activations, gauge(2))),
		delim(cat(name("other"), name(exposition.Activations), field(4, gauge(5)))),
		delim(mf(exposition.QueueRunDuration, cat(hist, gauge(1)))),
		delim(marshalled),
		delim(mf(exposition.Activations, cat(label("", "x"), gauge(1)))),
		delim(mf(exposition.Activations, cat(label("tree", "\xff"), gauge(1)))),
		delim(cat(mf(exposition.Activations, gauge(1)), protowire.AppendTag(nil, 9, protowire.EndGroupType))),
		delim(cat(mf(exposition.Activations, gauge(1)), protowire.AppendTag(nil, 9, protowire.StartGroupType), protowire.AppendTag(nil, 9, protowire.EndGroupType))),
		delim(mf(exposition.Activations, cat(protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1), gauge(4)))),
	}
}

// TestParsersAgreeOnTheBenchBodies: the benchmark's bodies (compareBodies),
// and a demo replica with a queue and storage, read to the same series
// either way.
func TestParsersAgreeOnTheBenchBodies(t *testing.T) {
	fams := testFamilies()
	for _, format := range []expfmt.FormatType{expfmt.TypeTextPlain, expfmt.TypeProtoDelim} {
		bodies := [][]byte{}
		for file, f := range compareFiles {
			if f == format {
				body, err := os.ReadFile(filepath.Join(compareBodies, file))
				if err != nil {
					t.Fatal(err)
				}
				bodies = append(bodies, body)
			}
		}
		bodies = append(bodies, fuzzBodies(t, format)[0])
		for i, body := range bodies {
			var buf bytes.Buffer
			var got []Series
			var err error
			var ref map[string]*dto.MetricFamily
			if format == expfmt.TypeProtoDelim {
				if err = filterProto(bufio.NewReader(bytes.NewReader(body)), &buf, fams.index, math.MaxInt64); err == nil {
					got, err = ParseProto(buf.Bytes(), fams, 0, nil)
					ref, _ = expfmtProto(bytes.NewBuffer(buf.Bytes()), 0)
				}
			} else if err = filterText(bufio.NewReader(bytes.NewReader(body)), &buf, fams.index); err == nil {
				var ok bool
				got, ok = parseTextSeries(buf.Bytes(), fams, nil)
				if !ok && !strings.Contains(buf.String(), "histogram") {
					t.Errorf("%v body %d: the text parser left a plain body to expfmt", format, i)
				}
				p := expfmt.NewTextParser(model.UTF8Validation)
				ref, _ = p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
				if !ok {
					got = fromFamilies(ref, fams, nil)
				}
			}
			if err != nil {
				t.Fatalf("%v body %d: %v", format, i, err)
			}
			if want := fromFamilies(ref, fams, nil); len(got) == 0 || !sameSeries(got, want) {
				t.Errorf("%v body %d: got %+v\nwant %+v", format, i, got, want)
			}
		}
	}
}
