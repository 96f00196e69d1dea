package signalapi

import (
	"context"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/target"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// interval is the sample interval of every test target. Samplers run on
// fakeClock, so it only sets timestamps, staleness and the Watch recheck.
const interval = 100 * time.Millisecond

// fakeClock is a signal.Clock whose ticks the test sends one by one, so a
// test decides exactly when a sampler samples.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[chan time.Time]time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), tickers: map[chan time.Time]time.Duration{}}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time)
	c.mu.Lock()
	c.tickers[ch] = d
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.tickers, ch)
		c.mu.Unlock()
	}
}

func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Tick advances the clock by one interval and delivers a tick to every
// sampler ticker, blocking until each sampler has taken it. That sampler
// then samples once and publishes.
func (c *fakeClock) Tick(t *testing.T) time.Time {
	t.Helper()
	now := c.Advance(interval)
	c.mu.Lock()
	var chans []chan time.Time
	for ch, d := range c.tickers {
		if d == interval {
			chans = append(chans, ch)
		}
	}
	c.mu.Unlock()
	if len(chans) == 0 {
		t.Fatal("no sampler ticker to tick")
	}
	for _, ch := range chans {
		select {
		case ch <- now:
		case <-time.After(5 * time.Second):
			t.Fatal("sampler did not take its tick")
		}
	}
	return now
}

// scriptSource is a source whose one replica reports the CPU the test set.
type scriptSource struct {
	name string
	cpu  atomic.Uint64 // float64 bits
}

func (s *scriptSource) Set(cpu float64) { s.cpu.Store(math.Float64bits(cpu)) }

func (s *scriptSource) Observe(context.Context) (pressure.Observation, error) {
	return pressure.Observation{Replicas: []pressure.ReplicaObservation{
		{Name: s.name + "-0", CPUUtilisation: math.Float64frombits(s.cpu.Load())},
	}}, nil
}

type scriptSpec struct{ src *scriptSource }

func (s scriptSpec) Key() string                               { return "script/" + s.src.name }
func (s scriptSpec) New(*slog.Logger) (pressure.Source, error) { return s.src, nil }

// env is a registry of scripted targets served over loopback gRPC.
type env struct {
	clock   *fakeClock
	reg     *target.Registry
	scripts map[string]*scriptSource
	srv     *Server
	grpc    *grpc.Server
	client  barometerv1.SignalServiceClient
}

// newEnv starts a registry with source kind "script" (metadata key "script"
// picks one of the named sources), a SignalService on 127.0.0.1:0 and a
// generated client connected to it.
func newEnv(t *testing.T, scripts ...string) *env {
	t.Helper()
	e := &env{clock: newFakeClock(), scripts: map[string]*scriptSource{}}
	sources := target.NewSources()
	for _, name := range scripts {
		e.scripts[name] = &scriptSource{name: name}
	}
	sources.Register("script", func(p *target.Params) (target.SourceSpec, error) {
		v := p.String("script", scripts[0])
		src, ok := e.scripts[v]
		if !ok {
			return nil, &target.MetadataError{Key: "script", Value: v, Allowed: "a script the test made"}
		}
		return scriptSpec{src}, nil
	})

	ctx, cancel := context.WithCancel(context.Background())
	e.reg = target.NewRegistry(ctx, target.Config{Sources: sources, DefaultInterval: interval, Clock: e.clock})
	running := make(chan struct{})
	go func() {
		defer close(running)
		e.reg.Run(ctx)
	}()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.srv = NewServer(e.reg, e.clock.Now)
	e.grpc = grpc.NewServer()
	barometerv1.RegisterSignalServiceServer(e.grpc, e.srv)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = e.grpc.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	e.client = barometerv1.NewSignalServiceClient(conn)

	t.Cleanup(func() {
		_ = conn.Close()
		e.srv.Shutdown()
		e.grpc.Stop()
		<-served
		cancel()
		<-running // every sampler has stopped
	})
	return e
}

// acquire starts (or shares) the target for raw metadata, as the KEDA
// scaler does on its first call for ref, and waits for its first sample.
// The zero Ref makes it the default target.
func (e *env) acquire(t *testing.T, ref target.Ref, raw map[string]string) *target.Target {
	t.Helper()
	raw["source"] = "script"
	md, err := e.reg.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var tgt *target.Target
	if ref == (target.Ref{}) {
		tgt, err = e.reg.SetDefault(md)
	} else {
		tgt, err = e.reg.Acquire(ref, md)
	}
	if err != nil {
		t.Fatal(err)
	}
	if tgt.WaitFirst(context.Background(), 5*time.Second).Signal.WarmingUp() {
		t.Fatal("target did not take its first sample")
	}
	return tgt
}
