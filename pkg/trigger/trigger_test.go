package trigger

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
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
func constKind() sourcekind.Kind {
	type config struct{ name string }
	keys := []keyschema.Key[config]{keyschema.String("name", func(c *config) *string { return &c.name }, "x", "any name", nil)}
	return sourcekind.New("const", "fixed pressure", func() config { return config{} }, keys, nil,
		func(c config) (sourcekind.Spec, error) { return constSpec(c.name), nil })
}

// hostKind stands in for host.Kind with a fixed pressure, so that tests
// never read the machine: source "host", the default, with no keys and a
// spec whose key is "host".
func hostKind() sourcekind.Kind {
	return sourcekind.New(DefaultSource, "stands in for the host source", func() struct{} { return struct{}{} }, nil, nil,
		func(struct{}) (sourcekind.Spec, error) { return hostStandIn{}, nil })
}

type hostStandIn struct{}

func (hostStandIn) Key() string { return DefaultSource }
func (hostStandIn) New(*slog.Logger) (pressure.Source, error) {
	return constSpec("host").New(nil)
}

func testSources() *Schema { return NewSchema(hostKind(), constKind()) }

func TestParseDefaults(t *testing.T) {
	md, err := testSources().Parse(map[string]string{"scalerAddress": "x:6000"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := signal.ProfileOptions(signal.DefaultProfile)
	want.SurgeTarget = 0.7 // the responsive profile's surge reads the target
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
		"enableTLS": "true", "unsafeSsl": "true", "profile": "original", "replicaStartup": "20s", "leadWindow": "5",
		"leadSignificance": "1.5", "scaleInHysteresis": "0.1", "scaleInNoiseMargin": "2", "saturationSurge": "true", "surgeLevel": "0.9",
		"shortfallBudget": "0.05", "scaleInHold": "2m", "forecast": "only",
	}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := signal.Options{MinReplicas: 2, FloorTarget: 0.5, EwmaHalfLife: time.Minute, ScaleInGateWindow: 30 * time.Second,
		ActivationScaleInThreshold: 0.1, ResourceScaleInThreshold: 0.2, WalDispatchScaleInThreshold: 0.3,
		ReplicaStartup: 20 * time.Second, LeadWindow: 5, LeadSignificance: 1.5, ScaleInHysteresis: 0.1, ScaleInNoiseMargin: 2,
		SaturationSurge: true, SurgeLevel: 0.9, SurgeTarget: 0.5, ShortfallBudget: 0.05, ScaleInHold: 2 * time.Minute, Forecast: signal.ForecastOnly}
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
	var me *keyschema.MetadataError
	_, err := testSources().Parse(map[string]string{"sampleInterval": "1h"}, time.Second)
	if !errors.As(err, &me) || me.Key != "sampleInterval" || !strings.Contains(err.Error(), "from 100ms to 10m0s") {
		t.Fatalf("range error: %v", err)
	}
}

func TestFromEnvKeys(t *testing.T) {
	md, err := testSources().Parse(map[string]string{"targetPressureFromEnv": "0.4", "minReplicasFromEnv": "2"}, time.Second)
	if err != nil || md.TargetPressure != 0.4 || md.Signal.MinReplicas != 2 {
		t.Fatalf("FromEnv keys: %+v %v", md, err)
	}
	var me *keyschema.MetadataError
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

// The profile decides the defaults of the signal's keys; a key set beside
// it overrides it; the profile and every option split the sampler.
func TestProfiles(t *testing.T) {
	budgeted, err := testSources().Parse(map[string]string{}, time.Second)
	if err != nil || budgeted.Profile != signal.ProfileBudgeted || !budgeted.Signal.SaturationSurge || budgeted.Signal.LeadWindow == 0 ||
		budgeted.Signal.ShortfallBudget != signal.DefaultShortfallBudget || budgeted.Signal.ScaleInHold != signal.DefaultScaleInHold {
		t.Fatalf("default profile: %+v %v", budgeted, err)
	}
	original, err := testSources().Parse(map[string]string{"profile": "original"}, time.Second)
	if err != nil || original.Signal != signal.DefaultOptions() {
		t.Fatalf("original: %+v %v", original.Signal, err)
	}
	tuned, err := testSources().Parse(map[string]string{"profile": "original", "saturationSurge": "true"}, time.Second)
	if err != nil || !tuned.Signal.SaturationSurge || tuned.Signal.SurgeTarget != DefaultTargetPressure || tuned.Signal.EwmaHalfLife != signal.DefaultEwmaHalfLife {
		t.Fatalf("original with the surge: %+v %v", tuned.Signal, err)
	}
	if budgeted.Identity() == original.Identity() || original.Identity() == tuned.Identity() {
		t.Error("profiles share a sampler")
	}
	var me *keyschema.MetadataError
	for key, value := range map[string]string{"profile": "fast", "leadWindow": "2", "surgeLevel": "1.5", "replicaStartup": "2h", "shortfallBudget": "0.6", "scaleInHold": "-1s", "forecast": "maybe"} {
		if _, err := testSources().Parse(map[string]string{key: value}, time.Second); !errors.As(err, &me) || me.Key != key {
			t.Errorf("%s=%s: %v", key, value, err)
		}
	}
	if _, err := testSources().Parse(map[string]string{"policy": "queue", "profile": "original"}, time.Second); !errors.As(err, &me) || me.Key != "profile" {
		t.Errorf("profile with a replica policy: %v", err)
	}
}

// TestTargetPressureSmallest: KEDA sends the per-replica target as a
// quantity in thousandths, so a target below 0.001 would reach the HPA as
// 0. The smallest it keeps is accepted; the next smaller is refused,
// naming the key and the smallest allowed value.
func TestTargetPressureSmallest(t *testing.T) {
	md, err := testSources().Parse(map[string]string{"targetPressure": "0.001"}, time.Second)
	if err != nil || md.TargetPressure != 0.001 {
		t.Fatalf("0.001: %v %v", md, err)
	}
	for _, v := range []string{"0.0009", "0.0001", "4.9e-324", "0"} {
		_, err := testSources().Parse(map[string]string{"targetPressure": v}, time.Second)
		var me *keyschema.MetadataError
		if !errors.As(err, &me) || me.Key != "targetPressure" || !strings.Contains(err.Error(), "[0.001,") {
			t.Errorf("%s: %v, want refused on targetPressure naming 0.001", v, err)
		}
	}
}

// A ScaledObject's trigger names its source: the default, the scaler's own
// machine, would scale the workload on the scaler's load. The refusal
// names every source and what it reads. The scaler's own default target
// (no namespace) keeps the host source unnamed.
func TestScaledObjectsNameTheirSource(t *testing.T) {
	for _, raw := range []map[string]string{nil, {}, {"scalerAddress": "x:6000", "targetPressure": "0.5"}} {
		_, err := testSources().ParseIn("shop", raw, 5*time.Second)
		var me *keyschema.MetadataError
		if !errors.As(err, &me) || me.Key != "source" || !strings.Contains(me.Allowed, "const (fixed pressure)") || !strings.Contains(me.Allowed, "host (") {
			t.Errorf("%v: err = %v, want the source key required with every kind described", raw, err)
		}
	}
	if md, err := testSources().ParseIn("shop", map[string]string{"source": "host"}, 5*time.Second); err != nil || md.SourceKind != "host" {
		t.Errorf("source named: %v %v", md, err)
	}
	if md, err := testSources().Parse(nil, 5*time.Second); err != nil || md.SourceKind != DefaultSource {
		t.Errorf("the default target: %v %v", md, err)
	}
}
