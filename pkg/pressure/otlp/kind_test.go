package otlp

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

func newOTLPStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.New(store.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// parseOTLP parses otlp metadata for a ScaledObject of namespace, adding
// source and resourceSelector unless given.
func parseOTLP(t *testing.T, st *store.Store, namespace string, kv map[string]string) (*trigger.Trigger, error) {
	t.Helper()
	raw := map[string]string{"source": KindName, "resourceSelector": "k8s.deployment.name=shop"}
	maps.Copy(raw, kv)
	return trigger.NewSchema(Kind(st, nil)).ParseIn(namespace, raw, time.Second)
}

func TestOTLPDefaults(t *testing.T) {
	tr, err := parseOTLP(t, newOTLPStore(t), "team-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Source.(otlpSpec).cfg
	if c.Namespace != "team-a" || len(c.Selector) != 1 || c.Selector["k8s.deployment.name"] != "shop" ||
		c.Window != DefaultWindow || c.MaxAge != DefaultMaxAge || c.CPULimitCores != 0 || c.Names != exposition.DefaultNames() {
		t.Errorf("defaults = %+v", c)
	}
	if tr.Interval != time.Second {
		t.Errorf("interval %s: the otlp source reads memory and samples at whatever interval it is given", tr.Interval)
	}
}

func TestOTLPKeys(t *testing.T) {
	tr, err := parseOTLP(t, newOTLPStore(t), "team-a", map[string]string{
		"resourceSelector": " service.name = shop , k8s.deployment.name=web ", "window": "45s", "maxAge": "10s",
		"cpuLimitCores": "1.5", "cpuMetric": "process.cpu.time",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Source.(otlpSpec).cfg
	if c.Selector["service.name"] != "shop" || c.Selector["k8s.deployment.name"] != "web" || c.Window != 45*time.Second ||
		c.MaxAge != 10*time.Second || c.CPULimitCores != 1.5 || c.Names.CPUSeconds != "process.cpu.time" {
		t.Errorf("parsed %+v", c)
	}
	// The source builds, against the store the kind was given.
	src, err := tr.Source.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// A store that has just started holds too little to know the pool.
	if _, err := src.Observe(context.Background()); err == nil || !strings.Contains(err.Error(), "waiting for the pool") {
		t.Errorf("a store that has just started: %v, want a sample that waits", err)
	}
}

// The namespace is the ScaledObject's, whatever the metadata says: a
// trigger in one namespace never keys the same source as another's.
func TestOTLPNamespaceIsTheScaledObjects(t *testing.T) {
	st := newOTLPStore(t)
	a, err := parseOTLP(t, st, "team-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseOTLP(t, st, "team-b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.SourceKey() == b.SourceKey() || a.Identity() == b.Identity() {
		t.Errorf("two namespaces share a source: %q", a.SourceKey())
	}
	if _, err := parseOTLP(t, st, "team-a", map[string]string{"resourceSelector": "k8s.namespace.name=team-b"}); !isKeyError(err, "resourceSelector") {
		t.Errorf("selecting the namespace by attribute: %v, want a resourceSelector error", err)
	}
	// The scaler's own default target belongs to no namespace.
	if _, err := parseOTLP(t, st, "", nil); !isKeyError(err, "source") {
		t.Errorf("no namespace: %v, want a source error", err)
	}
}

func TestOTLPRefusals(t *testing.T) {
	st := newOTLPStore(t)
	for _, tc := range []struct {
		kv  map[string]string
		key string
	}{
		{map[string]string{"resourceSelector": ""}, "resourceSelector"},
		{map[string]string{"resourceSelector": "app=shop"}, "resourceSelector"},
		{map[string]string{"resourceSelector": "service.name="}, "resourceSelector"},
		{map[string]string{"resourceSelector": "service.name=a,service.name=b"}, "resourceSelector"},
		{map[string]string{"window": "0s"}, "window"},
		{map[string]string{"window": "5m"}, "window"}, // beyond the store's history
		{map[string]string{"maxAge": "1h"}, "maxAge"}, // beyond its retention
		{map[string]string{"cpuLimitCores": "-1"}, "cpuLimitCores"},
		{map[string]string{"cpuMetric": "shop", "memoryMetric": "shop"}, "memoryMetric"},
		{map[string]string{"poolService": "Shop"}, "poolService"},
		{map[string]string{"poolService": "shop"}, "poolService"}, // no Kubernetes
	} {
		if _, err := parseOTLP(t, st, "team-a", tc.kv); !isKeyError(err, tc.key) {
			t.Errorf("%v: %v, want an error on %s", tc.kv, err, tc.key)
		}
	}
	// A scaler whose receiver is off documents the kind and refuses it.
	_, err := parseOTLP(t, nil, "team-a", nil)
	if !isKeyError(err, "source") || !strings.Contains(err.Error(), "BAROMETER_OTLP_GRPC_ADDR") {
		t.Errorf("receiver off: %v", err)
	}
}

func isKeyError(err error, key string) bool {
	var me *keyschema.MetadataError
	return errors.As(err, &me) && me.Key == key
}
