package trigger

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// constSpec is a source with fixed pressure, standing in for a workload
// because the registry's bookkeeping, not sampling, is under test.
type constSpec string

func (c constSpec) Key() string { return "const:" + string(c) }
func (c constSpec) New(*slog.Logger) (pressure.Source, error) {
	if c == "broken" {
		return nil, errors.New("cannot build")
	}
	return pressure.SourceFunc(func(context.Context) (pressure.Observation, error) {
		return pressure.Observation{Replicas: []pressure.ReplicaObservation{{Name: "a", CPUUtilisation: 0.5}}}, nil
	}), nil
}

// constKind offers constSpec as source "const"; key "name" names it.
func constKind() Kind {
	type config struct{ name string }
	keys := []Key[config]{String("name", func(c *config) *string { return &c.name }, "x", "any name", nil)}
	return NewKind("const", "fixed pressure", func() config { return config{} }, keys, nil,
		func(c config) (SourceSpec, error) { return constSpec(c.name), nil })
}

func testSources() *Schema { return NewSchema(Host(), constKind()) }

func TestParseDefaults(t *testing.T) {
	md, err := testSources().Parse(map[string]string{"scalerAddress": "x:6000"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := signal.DefaultOptions()
	if md.Source.Key() != "host" || md.TargetPressure != 0.7 || md.ActivationValue != 0 || md.MetricName != "barometer-pressure" ||
		md.Floor != FloorTarget || md.Interval != 5*time.Second || md.Signal != want || md.ActivationWorkingSetTarget != 100000 {
		t.Fatalf("defaults: %+v", md)
	}
}

func TestParseEveryKey(t *testing.T) {
	md, err := testSources().Parse(map[string]string{
		"source": "const", "name": "q", "targetPressure": "0.5", "activationValue": "0.2", "metricName": "orders.p",
		"floor": "target", "sampleInterval": "2s", "activationWorkingSetTarget": "500", "minReplicas": "2",
		"ewmaHalfLife": "1m", "scaleInGateWindow": "30s", "activationScaleInThreshold": "0.1",
		"resourceScaleInThreshold": "0.2", "walDispatchScaleInThreshold": "0.3", "splitAwareScaleIn": "false",
		"enableTLS": "true", "unsafeSsl": "true",
	}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := signal.Options{MinReplicas: 2, FloorTarget: 0.5, EwmaHalfLife: time.Minute, ScaleInGateWindow: 30 * time.Second,
		ActivationScaleInThreshold: 0.1, ResourceScaleInThreshold: 0.2, WalDispatchScaleInThreshold: 0.3}
	if md.Signal != want || md.Source.Key() != "const:q" || md.Interval != 2*time.Second || md.ActivationWorkingSetTarget != 500 ||
		md.MetricName != "orders.p" || md.ActivationValue != 0.2 {
		t.Fatalf("parsed: %+v", md)
	}
	md, err = testSources().Parse(map[string]string{"minReplicas": "2", "floor": "replicas"}, time.Second)
	if err != nil || md.Signal.FloorTarget != 0 {
		t.Fatalf("floor replicas: %+v %v", md.Signal, err)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	var me *MetadataError
	_, err := testSources().Parse(map[string]string{"sampleInterval": "1h"}, time.Second)
	if !errors.As(err, &me) || me.Key != "sampleInterval" || !strings.Contains(err.Error(), "from 100ms to 10m0s") {
		t.Fatalf("range error: %v", err)
	}
	_, err = testSources().Parse(map[string]string{"tagetPressure": "0.5"}, time.Second)
	if !errors.As(err, &me) || me.Key != "tagetPressure" || !strings.Contains(err.Error(), "targetPressure") {
		t.Fatalf("unknown key error should list the allowed keys: %v", err)
	}
}

func TestFromEnvKeys(t *testing.T) {
	md, err := testSources().Parse(map[string]string{"targetPressureFromEnv": "0.4", "minReplicasFromEnv": "2"}, time.Second)
	if err != nil || md.TargetPressure != 0.4 || md.Signal.MinReplicas != 2 {
		t.Fatalf("FromEnv keys: %+v %v", md, err)
	}
	var me *MetadataError
	_, err = testSources().Parse(map[string]string{"targetPressureFromEnv": "lots"}, time.Second)
	if !errors.As(err, &me) || me.Key != "targetPressureFromEnv" {
		t.Fatalf("bad FromEnv value: %v", err)
	}
	_, err = testSources().Parse(map[string]string{"targetPressure": "0.5", "targetPressureFromEnv": "0.4"}, time.Second)
	if !errors.As(err, &me) || me.Key != "targetPressureFromEnv" || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("both spellings: %v", err)
	}
	_, err = testSources().Parse(map[string]string{"surpriseFromEnv": "1"}, time.Second)
	if !errors.As(err, &me) || me.Key != "surpriseFromEnv" {
		t.Fatalf("unknown FromEnv key: %v", err)
	}
}
