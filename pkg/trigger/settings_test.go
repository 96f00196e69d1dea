package trigger_test

import (
	"errors"
	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promkind"
	"github.com/barometer-scaler/barometer/pkg/trigger"
	"testing"
	"time"
)

// TestSettingsSayWhereEachValueCameFrom: a key the trigger set comes from
// its metadata, a signal option left unset from the profile, anything else
// from its default; the scaler's own default interval counts as a default.
func TestSettingsSayWhereEachValueCameFrom(t *testing.T) {
	s := trigger.NewSchema(host.Kind(), promkind.Kind(nil, nil))
	got, err := s.Settings("monitoring", map[string]string{
		"source": "prometheus", "serverAddress": promServer, "profile": "original", "leadWindow": "5",
		"targetPressureFromEnv": "0.5",
	}, 7*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]trigger.Setting{}
	for _, st := range got {
		if _, dup := by[st.Key]; dup {
			t.Errorf("%s listed twice", st.Key)
		}
		by[st.Key] = st
	}
	for key, want := range map[string]trigger.Setting{
		"source":            {Key: "source", Value: "prometheus", Origin: keyschema.OriginMetadata},
		"profile":           {Key: "profile", Value: "original", Origin: keyschema.OriginMetadata},
		"leadWindow":        {Key: "leadWindow", Value: "5", Origin: keyschema.OriginMetadata},
		"targetPressure":    {Key: "targetPressure", Value: "0.5", Origin: keyschema.OriginMetadata},
		"ewmaHalfLife":      {Key: "ewmaHalfLife", Value: "30s", Origin: keyschema.OriginProfile},
		"sampleInterval":    {Key: "sampleInterval", Value: "7s", Origin: keyschema.OriginDefault},
		"policy":            {Key: "policy", Value: "pressure", Origin: keyschema.OriginDefault},
		"serverAddress":     {Key: "serverAddress", Value: `"` + promServer + `"`, Origin: keyschema.OriginMetadata},
		"replicaLabel":      {Key: "replicaLabel", Value: `"pod"`, Origin: keyschema.OriginDefault},
		"connectionProfile": {Key: "connectionProfile", Value: `""`, Origin: keyschema.OriginDefault},
	} {
		if by[key] != want {
			t.Errorf("%s: %+v, want %+v", key, by[key], want)
		}
	}
	if _, ok := by["maxReplicas"]; ok {
		t.Error("a key the policy does not read is listed")
	}
	if _, ok := by["targets"]; ok {
		t.Error("another source's key is listed")
	}
}

// TestSettingsRefuseWhatParseRefuses: Settings is a parse; bad metadata is
// the same error.
func TestSettingsRefuseWhatParseRefuses(t *testing.T) {
	_, err := trigger.NewSchema(host.Kind()).Settings("", map[string]string{"targetPressureFromEnv": "0.0009"}, time.Second)
	var me *keyschema.MetadataError
	if !errors.As(err, &me) || me.Key != "targetPressureFromEnv" {
		t.Fatalf("%v", err)
	}
}
