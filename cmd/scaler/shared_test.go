package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"

	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
)

// TestSharedTargetServesEachScaledObjectItsOwnKeys: two ScaledObjects whose
// triggers sample alike share one target, and differ in every read-side
// key (targetPressure, activationValue, metricName). Every surface answers
// each with its own: KEDA's GetMetricSpec, GetMetrics and IsActive, HTTP
// /scale, SignalService.Get, the audit (/events) and the status page's
// summary and decisions. Two replicas at 0.9 memory pressure are 1.8
// across the pool.
func TestSharedTargetServesEachScaledObjectItsOwnKeys(t *testing.T) {
	replica := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "process_resident_memory_bytes 900\nbarometer_memory_limit_bytes 1000\n")
	}))
	defer replica.Close()
	cfg := testConfig()
	cfg.AllowedTargets = "127.0.0.1"
	cfg.StatusPage = true
	addrs := startServe(t, cfg, io.Discard)
	conn := dial(t, addrs.GRPC)
	keda := externalscaler.NewExternalScalerClient(conn)
	signals := barometerv1.NewSignalServiceClient(conn)

	sampled := map[string]string{"source": "scrape", "targets": replica.URL + "/0," + replica.URL + "/1", "profile": "original"}
	type object struct {
		name, metric string
		target       float64
		activation   string
		replicas     int  // ceil(1.8 / target)
		active       bool // 1.8 > activationValue
	}
	objects := []object{
		{name: "orders", metric: "orders-pressure", target: 0.9, activation: "1", replicas: 2, active: true},
		{name: "checkout", metric: "checkout-pressure", target: 0.45, activation: "5", replicas: 4, active: false},
	}
	refOf := func(o object) *externalscaler.ScaledObjectRef {
		md := map[string]string{"targetPressure": fmt.Sprint(o.target), "activationValue": o.activation, "metricName": o.metric}
		for k, v := range sampled {
			md[k] = v
		}
		return &externalscaler.ScaledObjectRef{Namespace: "shop", Name: o.name, ScalerMetadata: md}
	}
	for _, o := range objects {
		spec, err := keda.GetMetricSpec(context.Background(), refOf(o))
		if err != nil || spec.MetricSpecs[0].MetricName != o.metric || spec.MetricSpecs[0].TargetSizeFloat != o.target {
			t.Fatalf("%s: GetMetricSpec %v %v", o.name, spec, err)
		}
	}
	// The first sample is taken when the first ScaledObject asks.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := keda.GetMetrics(context.Background(), &externalscaler.GetMetricsRequest{ScaledObjectRef: refOf(objects[0]), MetricName: objects[0].metric})
		if err == nil && got.MetricValues[0].MetricValueFloat == 1.8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GetMetrics never read 1.8: %v %v", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	get := func(path string) []byte { return getOK(t, addrs.HTTP, path) }
	var targets []struct {
		ScaledObjects []struct{ Name string } `json:"scaledObjects"`
	}
	if err := json.Unmarshal(get("/targets"), &targets); err != nil || len(targets) != 2 || len(targets[1].ScaledObjects)+len(targets[0].ScaledObjects) != 2 {
		// The default (host) target and the shared one.
		t.Fatalf("/targets: want the default target and one shared by both: %+v %v", targets, err)
	}
	for _, o := range objects {
		ref := refOf(o)
		got, err := keda.GetMetrics(context.Background(), &externalscaler.GetMetricsRequest{ScaledObjectRef: ref, MetricName: o.metric})
		if err != nil || got.MetricValues[0].MetricName != o.metric || got.MetricValues[0].MetricValueFloat != 1.8 {
			t.Errorf("%s: GetMetrics %v %v", o.name, got, err)
		}
		active, err := keda.IsActive(context.Background(), ref)
		if err != nil || active.Result != o.active {
			t.Errorf("%s: IsActive %v %v, want %t", o.name, active, err, o.active)
		}
		var scale struct {
			ScaleValue          float64 `json:"scaleValue"`
			RecommendedReplicas int     `json:"recommendedReplicas"`
		}
		if err := json.Unmarshal(get("/scale/shop/"+o.name), &scale); err != nil || scale.ScaleValue != 1.8 || scale.RecommendedReplicas != o.replicas {
			t.Errorf("%s: /scale %+v %v, want %d replicas", o.name, scale, err, o.replicas)
		}
		sig, err := signals.Get(context.Background(), &barometerv1.GetRequest{Namespace: "shop", Name: o.name})
		if err != nil || sig.GetRecommendedReplicas() != int32(o.replicas) {
			t.Errorf("%s: SignalService.Get recommends %d (%v), want %d", o.name, sig.GetRecommendedReplicas(), err, o.replicas)
		}
		var events []struct {
			ScaledObject string `json:"scaledObject"`
			Action       string `json:"action"`
			After        int    `json:"after"`
		}
		if err := json.Unmarshal(get("/events/shop/"+o.name), &events); err != nil || len(events) == 0 ||
			events[len(events)-1].After != o.replicas || events[len(events)-1].ScaledObject != "shop/"+o.name {
			t.Errorf("%s: /events %+v %v, want the last decision at %d replicas", o.name, events, err, o.replicas)
		}
		// A fresh slice: decoding into the one above would keep an
		// element's fields that an event leaves out (the default target's
		// events name no ScaledObject).
		var all []struct {
			ScaledObject string `json:"scaledObject"`
			Action       string `json:"action"`
			After        int    `json:"after"`
		}
		if err := json.Unmarshal(get("/events"), &all); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range all {
			if e.ScaledObject == "shop/"+o.name {
				found = true
				if e.After != o.replicas {
					t.Errorf("%s: /events lists %+v, want %d replicas", o.name, e, o.replicas)
				}
			}
		}
		if !found {
			t.Errorf("%s: /events lists none of its decisions", o.name)
		}
		page := string(get("/status/shop/" + o.name))
		for _, want := range []string{
			fmt.Sprintf("<dt>Per-replica target</dt><dd>%g</dd>", o.target),
			fmt.Sprintf("recommends %d", o.replicas),
			fmt.Sprintf("→ %d</td>", o.replicas),
		} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: the status page has no %q", o.name, want)
			}
		}
	}
}
