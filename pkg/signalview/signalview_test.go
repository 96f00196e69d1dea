package signalview_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/signalview"
)

// The /scale body byte for byte: names, order, numbers as numbers, enums
// by name, accounts [] and recommendation null when there are none, and
// staleReason only when stale. README's example is this shape.
func TestJSONIsTheScaleBody(t *testing.T) {
	fresh := signal.ScalingSignal{
		ScaleValue:          0.04,
		RecommendedReplicas: 1,
		Compute:             pressure.ComputePressure{Resource: 0.04, ReplicaCount: 1, Replicas: []pressure.ReplicaPressure{{Name: "host"}}},
		Storage:             pressure.StoragePressure{Accounts: []pressure.WalAccountPressure{}},
		Reason:              "resource pressure 0.04 across 1 replica(s)",
		SampledAt:           time.Date(2026, 11, 30, 2, 2, 3, 456000000, time.FixedZone("CET", 3600)),
		RawScaleValue:       0.04,
		Dominant:            signal.Resource,
		ScaleInAllowed:      true,
		Policy:              signal.PolicyPressure,
		Action:              "no-op",
		Cost:                signal.Cost{ReplicaSeconds: 25},
	}
	warm := signal.ScalingSignal{
		RecommendedReplicas: 2,
		Reason:              signal.ReasonWarmingUp,
		Policy:              signal.PolicyPressure,
		Storage:             pressure.StoragePressure{Accounts: []pressure.WalAccountPressure{}},
	}
	for _, c := range []struct {
		name     string
		sig      signal.ScalingSignal
		staleErr error
		want     string
	}{
		{"fresh", fresh, nil, `{"scaleValue":0.04,"recommendedReplicas":1,` +
			`"compute":{"activation":0,"resource":0.04,"walDispatch":0,"walSaturation":"Healthy"},` +
			`"storage":{"overThreshold":false,"walRetainedBytes":0,"accounts":[],"recommendation":null},` +
			`"reason":"resource pressure 0.04 across 1 replica(s)","sampledAt":"2026-11-30T01:02:03.456Z","rawScaleValue":0.04,` +
			`"stale":false,"target":"host@x","policy":"pressure","action":"no-op","cost":{"replicaSeconds":25,"cost":0},"dataAgeSeconds":null,"forecast":0,"forecastHistoryPending":false}`},
		{"warming up", warm, errors.New("warming up: no sample yet"), `{"scaleValue":0,"recommendedReplicas":2,` +
			`"compute":{"activation":0,"resource":0,"walDispatch":0,"walSaturation":"Healthy"},` +
			`"storage":{"overThreshold":false,"walRetainedBytes":0,"accounts":[],"recommendation":null},` +
			`"reason":"warming up","sampledAt":null,"rawScaleValue":0,` +
			`"stale":true,"target":"host@x","policy":"pressure","action":"","cost":{"replicaSeconds":0,"cost":0},` +
			`"dataAgeSeconds":null,"forecast":0,"forecastHistoryPending":false,"staleReason":"warming up: no sample yet"}`},
	} {
		got, err := json.Marshal(signalview.New(&c.sig, "host@x", c.staleErr))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// The working set's demand is served where a replica reports a working
// set, 0 (idle) included, and absent where none does; the view holds its
// own copy.
func TestWorkingSetDemandInTheScaleBody(t *testing.T) {
	idle, busy := 0.0, 7.5
	for _, c := range []struct {
		name    string
		demand  *float64
		compute string
	}{
		{"absent", nil, `"compute":{"activation":0,"resource":0,"walDispatch":0,"walSaturation":"Healthy"}`},
		{"idle", &idle, `"compute":{"activation":0,"resource":0,"walDispatch":0,"walSaturation":"Healthy","workingSetDemand":0}`},
		{"above the pool", &busy, `"compute":{"activation":0,"resource":0,"walDispatch":0,"walSaturation":"Healthy","workingSetDemand":7.5}`},
	} {
		sig := signal.ScalingSignal{Compute: pressure.ComputePressure{WorkingSetDemand: c.demand}}
		v := signalview.New(&sig, "k", nil)
		got, err := json.Marshal(v.Compute)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := c.compute[len(`"compute":`):]; string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
		if c.demand != nil && v.Compute.WorkingSetDemand == c.demand {
			t.Errorf("%s: the view shares the signal's working set demand", c.name)
		}
	}
}

// A view is the reader's own copy: editing it leaves the published signal
// alone.
func TestNewSharesNothingMutable(t *testing.T) {
	sig := signal.ScalingSignal{
		Compute: pressure.ComputePressure{Missing: []string{"b"}, Replicas: []pressure.ReplicaPressure{{Name: "a"}}},
		Storage: pressure.StoragePressure{
			Accounts:       []pressure.WalAccountPressure{{ProviderKey: "acct"}},
			Recommendation: &pressure.WalRebalanceRecommendation{Tree: "t"},
		},
	}
	v := signalview.New(&sig, "k", nil)
	v.Compute.Missing[0] = "x"
	v.Compute.Replicas[0].Name = "x"
	v.Storage.Accounts[0].ProviderKey = "x"
	v.Storage.Recommendation.Tree = "x"
	if sig.Compute.Missing[0] != "b" || sig.Compute.Replicas[0].Name != "a" ||
		sig.Storage.Accounts[0].ProviderKey != "acct" || sig.Storage.Recommendation.Tree != "t" {
		t.Errorf("editing the view changed the signal: %+v", sig)
	}
}
