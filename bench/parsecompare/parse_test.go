package parsecompare

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// BenchmarkPrometheusParse walks every entry of one replica's body, as a
// Prometheus scrape does before it appends: "series" reads each sample's
// series bytes and value (a scrape whose series cache knows them all, the
// steady state), "labels" also builds each sample's label set (a scrape
// meeting the series for the first time).
func BenchmarkPrometheusParse(b *testing.B) {
	for _, c := range []struct {
		name, file string
		parser     func(body []byte, st *labels.SymbolTable) textparse.Parser
	}{
		{"text", "testdata/replica.txt", func(body []byte, st *labels.SymbolTable) textparse.Parser {
			return textparse.NewPromParser(body, st, false)
		}},
		{"protobuf", "testdata/replica.pb", func(body []byte, st *labels.SymbolTable) textparse.Parser {
			return textparse.NewProtobufParser(body, false, false, false, false, st)
		}},
	} {
		body, err := os.ReadFile(c.file)
		if err != nil {
			b.Fatal(err)
		}
		for _, withLabels := range []bool{false, true} {
			name := c.name + "/series"
			if withLabels {
				name = c.name + "/labels"
			}
			b.Run(name, func(b *testing.B) {
				st := labels.NewSymbolTable()
				var lset labels.Labels
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				samples := 0
				for b.Loop() {
					p := c.parser(body, st)
					samples = 0
					for {
						entry, err := p.Next()
						if errors.Is(err, io.EOF) {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						switch entry {
						case textparse.EntrySeries:
							p.Series()
						case textparse.EntryHistogram:
							p.Histogram()
						default:
							continue
						}
						samples++
						if withLabels {
							p.Labels(&lset)
						}
					}
				}
				b.ReportMetric(float64(samples), "samples")
			})
		}
	}
}
