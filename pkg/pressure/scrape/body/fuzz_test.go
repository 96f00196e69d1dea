package body

import (
	"bufio"
	"bytes"
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// fuzzLimit is the response limit the fuzzed bodies are read under: small,
// so that the fuzzer also reaches the limit's errors.
const fuzzLimit = 1 << 16

// fuzzBodies are seeds for the parse targets: a demo replica with its
// queue and storage, in the format given, plus a few hand-made edges.
func fuzzBodies(f testing.TB, t expfmt.FormatType) [][]byte {
	w := demo.New(demo.Config{Queue: true, Tree: "wal", Accounts: []string{"a", "b"}, PaddingSeries: 1})
	w.SetLoad(50)
	w.SetSplits(1)
	fams, err := w.Registry().Gather()
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(t))
	for _, fam := range fams {
		if err := enc.Encode(fam); err != nil {
			f.Fatal(err)
		}
	}
	return [][]byte{buf.Bytes(), buf.Bytes()[:buf.Len()/2], nil}
}

func textSeeds(f *testing.F) {
	for _, b := range fuzzBodies(f, expfmt.TypeTextPlain) {
		f.Add(b)
	}
	for _, s := range []string{
		"barometer_activations 1\nbarometer_activations{a=\"x\"} NaN\n",
		"# TYPE barometer_queue_run_duration_seconds histogram\nbarometer_queue_run_duration_seconds_sum 1.5\nbarometer_queue_run_duration_seconds_count 3\n",
		"barometer_wal_partition_account{tree=\"t\",partition=\"4095\",account=\"a\"} 1\n",
		"{\"barometer_activations\"} 3\n# TYPE \"quoted.name\" gauge\n",
		"barometer_queue_arrivals_total +Inf\nbarometer_queue_arrivals_total 1e308\n",
	} {
		f.Add([]byte(s))
	}
}

func fuzzWant() (exposition.Names, *Families) {
	n := exposition.DefaultNames()
	f, err := NewFamilies(&n)
	if err != nil {
		panic(err)
	}
	return n, f
}

// checkSample reads the series as a sample and checks what the folds
// downstream rely on.
func checkSample(t *testing.T, ss []Series, n *exposition.Names, fams *Families) {
	s, err := ReadSample(ss, fams, n)
	if err != nil {
		return
	}
	for name, tr := range s.trees {
		if name == "" {
			t.Fatal("a tree without a name")
		}
		for p := range tr.partitions {
			if p < 0 || p >= exposition.MaxPartitions {
				t.Fatalf("partition %d kept", p)
			}
		}
	}
	if s.Splits.OK && (math.IsNaN(s.Splits.V) || s.Splits.V < 0 || math.IsInf(s.Splits.V, 0)) {
		t.Fatalf("splits %v kept", s.Splits.V)
	}
	var f exposition.QueueFold
	var c exposition.QueueCounters
	s.FeedQueue(&f, "r")
	f.Observation(&c, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

// FuzzParseText runs a text body through the scrape's path, filter, parse
// and read: it must never panic, whatever the body.
func FuzzParseText(f *testing.F) {
	textSeeds(f)
	n, fams := fuzzWant()
	var tp TextParser
	f.Fuzz(func(t *testing.T, body []byte) {
		var buf bytes.Buffer
		if err := filterText(bufio.NewReaderSize(bytes.NewReader(body), ReaderSize), &buf, fams.index); err != nil {
			return
		}
		ss, err := tp.Parse(buf.Bytes(), fams, 0, nil)
		if err != nil {
			return
		}
		checkSample(t, ss, &n, fams)
	})
}

// FuzzParseProto runs a delimited protobuf body through the scrape's path:
// it must never panic, and never hold more than the limit.
func FuzzParseProto(f *testing.F) {
	for _, b := range fuzzBodies(f, expfmt.TypeProtoDelim) {
		f.Add(b)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x05, 0x0a, 0x03, 'a', 'b', 'c'})
	n, fams := fuzzWant()
	f.Fuzz(func(t *testing.T, body []byte) {
		var buf bytes.Buffer
		err := filterProto(bufio.NewReaderSize(bytes.NewReader(body), ReaderSize), &buf, fams.index, fuzzLimit)
		if buf.Len() > fuzzLimit {
			t.Fatalf("kept %d bytes under a %d-byte limit", buf.Len(), fuzzLimit)
		}
		if err != nil {
			return
		}
		ss, err := ParseProto(buf.Bytes(), fams, 0, nil)
		if err != nil {
			return
		}
		checkSample(t, ss, &n, fams)
	})
}

// FuzzFilterAgreement: the filters drop what the source does not read
// before expfmt parses (filter.go); on what they keep they must agree with
// a parse of the whole body. When the whole body parses, the filtered one
// parses too, to the same wanted families. The first byte picks the
// format: even for text, odd for delimited protobuf.
func FuzzFilterAgreement(f *testing.F) {
	for _, b := range fuzzBodies(f, expfmt.TypeTextPlain) {
		f.Add(append([]byte{0}, b...))
	}
	for _, b := range fuzzBodies(f, expfmt.TypeProtoDelim) {
		f.Add(append([]byte{1}, b...))
	}
	_, fams := fuzzWant()
	want := fams.index
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		protobuf, body := data[0]&1 == 1, data[1:]
		var full map[string]*dto.MetricFamily
		var err error
		var buf bytes.Buffer
		if protobuf {
			if !framed(body) {
				return // expfmt would allocate what a prefix announces
			}
			full, err = expfmtProto(bytes.NewBuffer(body), 0)
			if err == nil {
				err = filterProto(bufio.NewReaderSize(bytes.NewReader(body), ReaderSize), &buf, want, math.MaxInt64)
			}
		} else {
			p := expfmt.NewTextParser(model.UTF8Validation)
			full, err = p.TextToMetricFamilies(bytes.NewReader(body))
			if err == nil {
				err = filterText(bufio.NewReaderSize(bytes.NewReader(body), ReaderSize), &buf, want)
			}
		}
		if err != nil {
			return // the whole body does not parse: the filter may drop the fault
		}
		var kept map[string]*dto.MetricFamily
		if protobuf {
			kept, err = expfmtProto(&buf, 0)
		} else {
			p := expfmt.NewTextParser(model.UTF8Validation)
			kept, err = p.TextToMetricFamilies(&buf)
		}
		if err != nil {
			t.Fatalf("the whole body parses, the filtered one does not: %v\nfiltered: %q", err, buf.String())
		}
		for name := range want {
			a, b := full[name], kept[name]
			if !protobuf {
				a, b = withoutBuckets(a), withoutBuckets(b)
			}
			if (a == nil) != (b == nil) || a != nil && !proto.Equal(a, b) {
				t.Fatalf("family %q: whole %v\nfiltered %v", name, a, b)
			}
		}
	})
}

// framed reports whether every length prefix of a delimited protobuf body
// fits in what follows it. expfmt's decoder allocates what a prefix
// announces before reading, which is why the scrape filters first
// (filterProto); the whole-body reference parse must not either.
func framed(body []byte) bool {
	for len(body) > 0 {
		n, k := protowire.ConsumeVarint(body)
		if k < 0 || n > uint64(len(body)-k) {
			return false
		}
		body = body[k+int(n):]
	}
	return true
}

// withoutBuckets is a family as the source reads it from text: a
// histogram's _bucket lines name no wanted family (only _sum and _count are
// read), so the filter drops them, and a histogram series with neither sum
// nor count is no series, and a family left without series no family. Both
// parses are compared through it, since the two can differ only in series
// the source cannot read: a series of buckets only
// (testdata/fuzz/FuzzFilterAgreement/93bca6b989a1507d), which the filter
// drops, and a histogram sample under the bare family name
// (testdata/fuzz/FuzzFilterAgreement/2d065590fe105f77), which it keeps.
func withoutBuckets(fam *dto.MetricFamily) *dto.MetricFamily {
	if fam == nil {
		return nil
	}
	fam = proto.Clone(fam).(*dto.MetricFamily)
	var kept []*dto.Metric
	for _, m := range fam.GetMetric() {
		if h := m.GetHistogram(); h != nil {
			h.Bucket = nil
			if h.SampleSum == nil && h.SampleCount == nil && h.SampleCountFloat == nil {
				continue
			}
		}
		kept = append(kept, m)
	}
	if fam.Metric = kept; len(kept) == 0 {
		return nil
	}
	return fam
}
