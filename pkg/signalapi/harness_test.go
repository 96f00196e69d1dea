package signalapi

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/trigger"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// interval is the sample interval of every test target. Samplers run on
// a fake clock, so it only sets timestamps, staleness and the Watch recheck.
const interval = 100 * time.Millisecond

// oneReplica is the observation of script name: one replica at cpu.
func oneReplica(name string, cpu float64) pressure.Observation {
	return pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: name + "-0", CPUUtilisation: cpu}}}
}

// env is a registry of scripted targets served over loopback gRPC. Its
// samplers run on a fake clock, which ticks only when the test says.
type env struct {
	clock   *samplingtest.FakeClock
	reg     *registry.Registry
	scripts map[string]*registrytest.Script
	srv     *Server
	grpc    *grpc.Server
	client  barometerv1.SignalServiceClient
}

// set makes script name report one replica at cpu from its next sample.
func (e *env) set(name string, cpu float64) { e.scripts[name].Set(oneReplica(name, cpu)) }

// newEnv starts a registry with source kind "script" (metadata key "script"
// picks one of the named sources, each at CPU 0 until set), a
// SignalService on 127.0.0.1:0 and a generated client connected to it.
func newEnv(t *testing.T, scripts ...string) *env {
	t.Helper()
	e := &env{clock: samplingtest.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), scripts: map[string]*registrytest.Script{}}
	for _, name := range scripts {
		e.scripts[name] = registrytest.Returning(oneReplica(name, 0))
	}
	sources := trigger.NewSchema(registrytest.Kind("script", scripts[0], func(name string) *registrytest.Script { return e.scripts[name] }))
	e.reg = registrytest.NewRegistry(t, registry.Config{Schema: sources, DefaultInterval: interval, Clock: e.clock})

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.srv = NewServer(e.reg)
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
		// registrytest.NewRegistry's cleanup, registered first, runs last and
		// waits for every sampler to stop.
	})
	return e
}

// acquire starts (or shares) the target for raw metadata, as the KEDA
// scaler does on its first call for ref, and waits for its first sample.
// The zero Ref makes it the default target.
func (e *env) acquire(t *testing.T, ref registry.Ref, raw map[string]string) *registry.Target {
	t.Helper()
	raw["source"] = "script"
	md, err := e.reg.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var tgt *registry.Target
	if ref == (registry.Ref{}) {
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
