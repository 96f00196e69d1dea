package registrytest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

func TestScriptAnswersWhatWasSetLast(t *testing.T) {
	ctx := context.Background()
	var s registrytest.Script
	if _, err := s.Observe(ctx); err == nil {
		t.Fatal("the zero Script observed")
	}
	obs := pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}}}
	s.Set(obs)
	if got, err := s.Observe(ctx); err != nil || len(got.Replicas) != 1 || got.Replicas[0].CPUUtilisation != 0.5 {
		t.Fatalf("Set: %+v %v", got, err)
	}
	down := errors.New("down")
	s.Fail(down)
	if _, err := s.Observe(ctx); !errors.Is(err, down) {
		t.Fatalf("Fail: %v", err)
	}
	s.SetFunc(func(ctx context.Context) (pressure.Observation, error) { return obs, ctx.Err() })
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Observe(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("SetFunc: %v", err)
	}
}

func TestRegisterAndSample(t *testing.T) {
	scripts := map[string]*registrytest.Script{"a": registrytest.Returning(pressure.Observation{
		Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}},
	})}
	sources := trigger.NewSchema(registrytest.Kind("scripted", "a", func(name string) *registrytest.Script { return scripts[name] }))
	reg := registrytest.NewRegistry(t, registry.Config{Schema: sources, DefaultInterval: time.Hour})

	var me *keyschema.MetadataError
	if _, err := reg.Parse(map[string]string{"source": "scripted", "script": "nope"}); !errors.As(err, &me) || me.Key != registrytest.Key {
		t.Fatalf("unknown script: %v", err)
	}
	md, err := reg.Parse(map[string]string{"source": "scripted"})
	if err != nil || md.Source.Key() != "scripted/a" {
		t.Fatalf("default script: %v %v", md.Source, err)
	}
	tg, err := reg.Acquire(registry.Ref{}, md)
	if err != nil {
		t.Fatal(err)
	}
	registrytest.WaitSamples(t, tg, 1)
	if snap := tg.Load(); snap.LastErr != nil || snap.Signal.WarmingUp() {
		t.Fatalf("first sample: %+v", snap)
	}
}
