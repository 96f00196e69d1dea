package scrape

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// benchReplicas is the fleet of the benchmark: 1,000 replicas of
// about 300 series each, every one on its own loopback listener (as pods
// are on their own addresses), all served by one in-process HTTP server.
const benchReplicas = 1000

// realisticBody is one replica's exposition: the contract, the Go runtime
// collector, and a labelled request-duration histogram, as a typical service
// exposes them, in the given format. It returns the body and its series
// count.
func realisticBody(rps float64, format expfmt.Format) ([]byte, int) {
	w := demo.New(demo.Config{})
	w.SetLoad(rps)
	extra := prometheus.NewRegistry()
	extra.MustRegister(collectors.NewGoCollector())
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "http_request_duration_seconds", Help: "Request latency.", Buckets: prometheus.DefBuckets,
	}, []string{"handler", "method", "code"})
	extra.MustRegister(h)
	for _, handler := range []string{"/api/a", "/api/b", "/api/c", "/api/d", "/api/e"} {
		for _, code := range []string{"200", "500"} {
			h.WithLabelValues(handler, "GET", code).Observe(0.01)
			h.WithLabelValues(handler, "POST", code).Observe(0.2)
		}
	}
	fams, err := prometheus.Gatherers{w.Registry(), extra}.Gather()
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, format)
	series := 0
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			panic(err)
		}
		for _, m := range f.GetMetric() {
			switch {
			case m.GetHistogram() != nil:
				series += len(m.GetHistogram().GetBucket()) + 3 // +Inf, sum, count
			default:
				series++
			}
		}
	}
	return buf.Bytes(), series
}

type fleet struct {
	urls   []string
	series int
	size   int
}

var (
	fleetOnce sync.Once
	fleets    map[string]*fleet
)

// benchFleet starts the listeners once per process: the benchmark function
// runs several times as b.N grows, and 1,000 listeners per run would
// measure the setup.
func benchFleet(b *testing.B, format string) *fleet {
	fleetOnce.Do(func() {
		fleets = map[string]*fleet{}
		for name, f := range map[string]expfmt.Format{
			"text":     expfmt.NewFormat(expfmt.TypeTextPlain),
			"protobuf": expfmt.NewFormat(expfmt.TypeProtoDelim),
		} {
			var bodies [10][]byte
			fl := &fleet{}
			for i := range bodies {
				bodies[i], fl.series = realisticBody(float64(10*i), f)
			}
			fl.size = len(bodies[0])
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				addr := r.Context().Value(http.LocalAddrContextKey).(net.Addr).(*net.TCPAddr)
				w.Header().Set("Content-Type", string(f))
				_, _ = w.Write(bodies[addr.Port%len(bodies)])
			})
			srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
			for range benchReplicas {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					panic(err)
				}
				go func() { _ = srv.Serve(ln) }()
				fl.urls = append(fl.urls, "http://"+ln.Addr().String()+"/metrics")
			}
			fleets[name] = fl
		}
	})
	return fleets[format]
}

// BenchmarkSample1000Replicas is one sample over 1,000 replicas of ~300
// series. Run it with bench/scrape.sh. Besides ns/op and B/op it reports
// the live heap after the first sample and after the last, which stay level
// when memory is flat across samples.
func BenchmarkSample1000Replicas(b *testing.B) {
	for _, format := range []string{"text", "protobuf"} {
		b.Run(format, func(b *testing.B) {
			fl := benchFleet(b, format)
			src, err := New(Options{Targets: targets(b, fl.urls...), Timeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			sample := func() {
				obs, err := src.Observe(context.Background())
				if err != nil || len(obs.Replicas) != benchReplicas {
					b.Fatalf("%d replicas answered: %v %v", len(obs.Replicas), err, missingSummary(obs.Missing))
				}
			}
			sample() // connections up, pools warm, CPU marks set
			before := liveHeap()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for b.Loop() {
				sample()
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(fl.series), "series/replica")
			b.ReportMetric(float64(fl.size), "bytes/replica")
			b.ReportMetric(before/(1<<20), "live-MB-first")
			b.ReportMetric(liveHeap()/(1<<20), "live-MB-last")
		})
	}
}

// processCPU is the CPU time the process has used, user and system: on a
// machine shared with other work it measures a sample better than the wall
// clock, which also counts the time other processes held the core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}

// missingSummary shows the first failure, enough to see what broke.
func missingSummary(m []pressure.MissingReplica) string {
	if len(m) == 0 {
		return ""
	}
	return fmt.Sprintf("(%d missing, first %s: %v)", len(m), m[0].Name, m[0].Err)
}

// compareBodies holds one replica's body of the benchmark's fleet in each
// format, which BenchmarkParse here and bench/parsecompare (Prometheus' own
// parser, in a module of its own) both parse: the same bytes on both sides.
// go test -run TestCompareBodies -write-bodies ./pkg/pressure/scrape writes
// them anew.
const compareBodies = "../../../bench/parsecompare/testdata"

var writeBodies = flag.Bool("write-bodies", false, "write the bodies BenchmarkParse and bench/parsecompare parse")

var compareFiles = map[string]expfmt.FormatType{"replica.txt": expfmt.TypeTextPlain, "replica.pb": expfmt.TypeProtoDelim}

// TestCompareBodies: the bodies exist and read as a replica's sample, so a
// comparison never runs on a stale or empty file.
func TestCompareBodies(t *testing.T) {
	n, fams := fuzzWant()
	for file, format := range compareFiles {
		path := filepath.Join(compareBodies, file)
		if *writeBodies {
			body, _ := realisticBody(50, expfmt.NewFormat(format))
			if err := os.WriteFile(path, body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := parseBody(body, format, fams, bufio.NewReaderSize(nil, readerSize), &bytes.Buffer{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if s, err := readSample(ss, fams, &n); err != nil || s.activations.v == 0 || s.trees == nil {
			t.Fatalf("%s: %+v %v", file, s, err)
		}
	}
}

// parseBody is what a scrape does with a body once it has arrived: filter,
// then parse into series.
func parseBody(body []byte, format expfmt.FormatType, fams *families, r *bufio.Reader, buf *bytes.Buffer, dst []series) ([]series, error) {
	buf.Reset()
	r.Reset(bytes.NewReader(body))
	if format == expfmt.TypeProtoDelim {
		if err := filterProto(r, buf, fams.index, int64(len(body))); err != nil {
			return dst, err
		}
		return parseProtoSeries(buf.Bytes(), fams, 0, dst)
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
		r := bufio.NewReaderSize(nil, readerSize)
		b.Run(name+"/series", func(b *testing.B) {
			var buf bytes.Buffer
			var ss []series
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

// BenchmarkFetch1000Replicas is the HTTP exchange alone of one sample of
// BenchmarkSample1000Replicas: the same fleet and client, each body read
// and discarded. The difference between the two is what reading the
// replicas costs besides fetching them.
func BenchmarkFetch1000Replicas(b *testing.B) {
	for _, format := range []string{"text", "protobuf"} {
		b.Run(format, func(b *testing.B) {
			fl := benchFleet(b, format)
			c := newClient(DefaultMaxResponseBytes, wantSet{}, nil, nil)
			defer c.close()
			fetch := func(url string) error {
				req, err := http.NewRequest(http.MethodGet, url, nil)
				if err != nil {
					return err
				}
				req.Header.Set("Accept", acceptHeader)
				resp, err := c.http.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				_, err = io.Copy(io.Discard, resp.Body)
				return err
			}
			sample := func() {
				forEach(len(fl.urls), DefaultConcurrency, func(i int) {
					if err := fetch(fl.urls[i]); err != nil {
						b.Error(err)
					}
				})
			}
			sample()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for b.Loop() {
				sample()
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
