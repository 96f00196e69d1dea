package scrape

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// benchReplicas is the benchmark's fleet: 1,000 replicas of
// about 300 series each, every one on its own loopback listener (as pods
// are on their own addresses). By default (-replica-server process) they
// are served by a process of their own, so that the benchmark's process
// and core hold the scraper alone; see replicas_test.go.
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
	// replicas is the process serving the fleet, nil when it is served in
	// this one.
	replicas *replicaProcess
}

var (
	fleetOnce sync.Once
	fleets    map[string]*fleet
	fleetErr  error
)

var (
	replicaServer = flag.String("replica-server", "process",
		"the benchmark replicas' server: process (net/http in a process of its own), "+
			"or in this process: net/http, or raw (a pre-encoded response per request)")
	replicaCPU = flag.String("replica-cpu", "",
		"with -replica-server process, the CPU list the replicas' process is pinned to with taskset (empty: not pinned)")
)

// benchFormats are the expositions the benchmarks scrape, by sub-benchmark
// name.
var benchFormats = map[string]expfmt.Format{
	"text":     expfmt.NewFormat(expfmt.TypeTextPlain),
	"protobuf": expfmt.NewFormat(expfmt.TypeProtoDelim),
}

// benchFleet starts the replicas once per process: the benchmark function
// runs several times as b.N grows, and 1,000 listeners per run would
// measure the setup.
func benchFleet(b *testing.B, format string) *fleet {
	fleetOnce.Do(func() {
		switch *replicaServer {
		case "process":
			fleets, fleetErr = startReplicaProcess(*replicaCPU)
		case "net/http", "raw":
			fleets, fleetErr = serveFleets(*replicaServer)
		default:
			fleetErr = fmt.Errorf("-replica-server %q: want process, net/http or raw", *replicaServer)
		}
	})
	if fleetErr != nil {
		b.Fatal(fleetErr)
	}
	return fleets[format]
}

// serveFleets serves a fleet of benchReplicas per format in this process,
// each replica on its own loopback listener, with server (net/http or
// raw). Ten bodies of different loads are spread over the replicas.
func serveFleets(server string) (map[string]*fleet, error) {
	out := map[string]*fleet{}
	for name, f := range benchFormats {
		var bodies [10][]byte
		fl := &fleet{}
		for i := range bodies {
			bodies[i], fl.series = realisticBody(float64(10*i), f)
		}
		fl.size = len(bodies[0])
		var responses [len(bodies)][]byte
		for i, body := range bodies {
			responses[i] = fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", f, len(body))
			responses[i] = append(responses[i], body...)
		}
		for range benchReplicas {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, fmt.Errorf("replica listener: %w", err)
			}
			i := ln.Addr().(*net.TCPAddr).Port % len(bodies)
			if server == "net/http" {
				go serveNetHTTP(ln, string(f), bodies[i])
			} else {
				go serveRaw(ln, responses[i])
			}
			fl.urls = append(fl.urls, "http://"+ln.Addr().String()+"/metrics")
		}
		out[name] = fl
	}
	return out, nil
}

// serveRaw answers every request on ln's connections with resp, a whole
// HTTP/1.1 response encoded once, in one write: -replica-server raw. With
// the replicas in the scraper's process their side of a scrape shares the
// scraper's core, and this server costs as little as a server can; the
// default, a process of their own, needs no such stand-in.
func serveRaw(ln net.Listener, resp []byte) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			br := bufio.NewReader(conn)
			for {
				// A GET has no body: the request ends at its blank line.
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					if len(line) <= 2 {
						break
					}
				}
				if _, err := conn.Write(resp); err != nil {
					return
				}
			}
		}()
	}
}

// serveNetHTTP serves body with net/http, its length set (one write rather
// than chunks): the replicas' server in their own process, and in this one
// with -replica-server net/http.
func serveNetHTTP(ln net.Listener, contentType string, body []byte) {
	header := http.Header{"Content-Type": {contentType}, "Content-Length": {strconv.Itoa(len(body))}}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		maps.Copy(w.Header(), header)
		_, _ = w.Write(body)
	})}
	_ = srv.Serve(ln)
}

// replicaCPUMark is the replicas' process's CPU time so far, or false when
// the replicas are served in this process (and counted in cpu-ms/op).
func (fl *fleet) replicaCPUMark(b *testing.B) (time.Duration, bool) {
	if fl.replicas == nil {
		return 0, false
	}
	cpu, err := fl.replicas.cpu()
	if err != nil {
		b.Fatal(err)
	}
	return cpu, true
}

// reportCPU reports the CPU time per op of this process (cpu-ms/op, the
// scraper's alone when the replicas have a process of their own) and of
// the replicas' process (replica-cpu-ms/op), from marks taken before the
// loop.
func (fl *fleet) reportCPU(b *testing.B, cpu, replicaCPU time.Duration, separate bool) {
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
	if separate {
		now, _ := fl.replicaCPUMark(b)
		b.ReportMetric(float64(now-replicaCPU)/float64(b.N)/1e6, "replica-cpu-ms/op")
	}
}

// BenchmarkSample1000Replicas is one sample over 1,000 replicas of ~300
// series. Run it with bench/scrape.sh. Besides ns/op and B/op it reports
// the live heap after the first sample and after the last, which stay level
// when memory is flat across samples.
func BenchmarkSample1000Replicas(b *testing.B) {
	for _, format := range []string{"text", "protobuf"} {
		b.Run(format, func(b *testing.B) {
			fl := benchFleet(b, format)
			// Through an Exchange, as the scrape kind builds every source.
			src, err := New(Options{Targets: targets(b, fl.urls...), Timeout: 10 * time.Second, Exchange: NewExchange(ExchangeOptions{})})
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
			replicaCPU, separate := fl.replicaCPUMark(b)
			cpu := processCPU()
			for b.Loop() {
				sample()
			}
			b.StopTimer()
			fl.reportCPU(b, cpu, replicaCPU, separate)
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
// format, which the body package's BenchmarkParse and bench/parsecompare
// (Prometheus' own parser, in a module of its own) both parse: the same
// bytes on both sides.
const compareBodies = "../../../bench/parsecompare/testdata"

var writeBodies = flag.Bool("write-bodies", false, "write the bodies BenchmarkParse and bench/parsecompare parse")

// TestWriteCompareBodies writes the compare bodies anew with -write-bodies
// (go test -run TestWriteCompareBodies -write-bodies ./pkg/pressure/scrape);
// the body package's TestCompareBodies checks that they read as a
// replica's sample.
func TestWriteCompareBodies(t *testing.T) {
	if !*writeBodies {
		t.Skip("writes only with -write-bodies")
	}
	for file, format := range map[string]expfmt.FormatType{"replica.txt": expfmt.TypeTextPlain, "replica.pb": expfmt.TypeProtoDelim} {
		body, _ := realisticBody(50, expfmt.NewFormat(format))
		if err := os.WriteFile(filepath.Join(compareBodies, file), body, 0o644); err != nil {
			t.Fatal(err)
		}
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
			c := newClient(DefaultMaxResponseBytes, nil, nil, nil)
			defer c.close()
			fetch := func(url string) error {
				req, err := http.NewRequest(http.MethodGet, url, nil)
				if err != nil {
					return err
				}
				req.Header.Set("Accept", acceptHeader)
				resp, err := c.http.RoundTrip(req)
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
			replicaCPU, separate := fl.replicaCPUMark(b)
			cpu := processCPU()
			for b.Loop() {
				sample()
			}
			b.StopTimer()
			fl.reportCPU(b, cpu, replicaCPU, separate)
		})
	}
}
