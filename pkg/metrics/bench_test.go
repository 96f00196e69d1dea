package metrics_test

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

// thousandTargets is a scaler running 1,000 targets (ten namespaces of a
// hundred, the default caps), each sampled once, and one of them.
func thousandTargets(b *testing.B) (*fixture, *registry.Target) {
	scripts := map[string]*registrytest.Script{}
	for i := range 100 {
		scripts[fmt.Sprint("s", i)] = busy()
	}
	f := newFixture(b, scripts)
	var first *registry.Target
	for ns := range 10 {
		for i := range 100 {
			tg := f.acquire(b, registry.Ref{Namespace: fmt.Sprint("ns", ns), Name: fmt.Sprint("app", i)},
				map[string]string{"source": "scripted", "script": fmt.Sprint("s", i), "minReplicas": fmt.Sprint(ns)})
			if first == nil {
				first = tg
			}
		}
	}
	return f, first
}

// BenchmarkScrape1000Targets is one GET /metrics of a scaler running 1,000
// targets (ten namespaces of a hundred, the default caps), each sampled
// once: what a Prometheus scrape costs the process, and so what it takes
// from the gRPC reads beside it.
func BenchmarkScrape1000Targets(b *testing.B) {
	f, _ := thousandTargets(b)
	h := metrics.New(f.reg).Handler()
	b.ReportAllocs()
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip") // as Prometheus asks
		h.ServeHTTP(rec, req)
		size = rec.Body.Len()
		io.Copy(io.Discard, rec.Body)
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}

// BenchmarkReadDuringScrape1000Targets times what a GetMetrics beside a
// scrape waits for: a goroutine woken 2 ms apart (as the network poller
// wakes a handler) reads the default target's snapshot while /metrics is
// served back to back at 1,000 targets. The figure is the wake-to-read
// p99, in ms/op's place; the scrape itself is the other benchmark.
func BenchmarkReadDuringScrape1000Targets(b *testing.B) {
	f, tg := thousandTargets(b)
	h := metrics.New(f.reg).Handler()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		}
	}()
	// The wake crosses a loopback TCP connection, so the reader is woken
	// by the network poller, as a gRPC handler is.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	waits := make(chan time.Duration)
	var sent atomic.Int64
	go func() {
		buf := make([]byte, 1)
		for {
			if _, err := server.Read(buf); err != nil {
				close(waits)
				return
			}
			_ = tg.Load()
			waits <- time.Duration(time.Now().UnixNano() - sent.Load())
		}
	}()
	var all []time.Duration
	for b.Loop() {
		time.Sleep(2 * time.Millisecond)
		sent.Store(time.Now().UnixNano())
		if _, err := client.Write([]byte{1}); err != nil {
			b.Fatal(err)
		}
		all = append(all, <-waits)
	}
	close(stop)
	<-done
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "max-ms")
}
