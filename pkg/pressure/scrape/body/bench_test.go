package body

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// compareBodies holds one replica's body of the scrape benchmark's fleet
// in each format, which BenchmarkParse here and bench/parsecompare
// (Prometheus' own parser, in a module of its own) both parse: the same
// bytes on both sides. go test -run TestWriteCompareBodies -write-bodies
// ./pkg/pressure/scrape writes them anew.
const compareBodies = "../../../../bench/parsecompare/testdata"

var compareFiles = map[string]expfmt.FormatType{"replica.txt": expfmt.TypeTextPlain, "replica.pb": expfmt.TypeProtoDelim}

// TestCompareBodies: the bodies exist and read as a replica's sample, so a
// comparison never runs on a stale or empty file.
func TestCompareBodies(t *testing.T) {
	n, fams := fuzzWant()
	for file, format := range compareFiles {
		path := filepath.Join(compareBodies, file)
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := parseBody(body, format, fams, bufio.NewReaderSize(nil, ReaderSize), &bytes.Buffer{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if s, err := ReadSample(ss, fams, &n); err != nil || s.Activations.V == 0 || s.trees == nil {
			t.Fatalf("%s: %+v %v", file, s, err)
		}
	}
}

// parseBody is what a scrape does with a body once it has arrived: filter,
// then parse into series.
func parseBody(body []byte, format expfmt.FormatType, fams *Families, r *bufio.Reader, buf *bytes.Buffer, dst []Series) ([]Series, error) {
	buf.Reset()
	r.Reset(bytes.NewReader(body))
	if format == expfmt.TypeProtoDelim {
		if err := filterProto(r, buf, fams.index, int64(len(body))); err != nil {
			return dst, err
		}
		return ParseProto(buf.Bytes(), fams, 0, dst)
	}
	if err := filterText(r, buf, fams.index); err != nil {
		return dst, err
	}
	ss, ok := parseTextSeries(buf.Bytes(), fams, dst)
	if !ok {
		return dst, io.ErrUnexpectedEOF
	}
	return ss, nil
}

// BenchmarkParse is the parse alone of one replica's body (compareBodies):
// "series" is the scrape's (filter, then read the kept families into
// series), "expfmt" the same filter followed by expfmt's parse into
// client_model families, as the scrape parsed before. bench/parse.sh runs
// it beside Prometheus' parser on the same bodies.
func BenchmarkParse(b *testing.B) {
	_, fams := fuzzWant()
	for _, file := range []string{"replica.txt", "replica.pb"} {
		format := compareFiles[file]
		body, err := os.ReadFile(filepath.Join(compareBodies, file))
		if err != nil {
			b.Fatal(err)
		}
		name := "text"
		if format == expfmt.TypeProtoDelim {
			name = "protobuf"
		}
		// The reader and buffers are reused, as the scrape pools them.
		r := bufio.NewReaderSize(nil, ReaderSize)
		b.Run(name+"/series", func(b *testing.B) {
			var buf bytes.Buffer
			var ss []Series
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if ss, err = parseBody(body, format, fams, r, &buf, ss[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/expfmt", func(b *testing.B) {
			var buf bytes.Buffer
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				r.Reset(bytes.NewReader(body))
				if format == expfmt.TypeProtoDelim {
					err = filterProto(r, &buf, fams.index, int64(len(body)))
					if err == nil {
						_, err = expfmtProto(&buf, 0)
					}
				} else if err = filterText(r, &buf, fams.index); err == nil {
					p := expfmt.NewTextParser(model.UTF8Validation)
					_, err = p.TextToMetricFamilies(&buf)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
