package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

// jobs is one replica with 120 items ready: the queue policy asks for 4.
func jobs() *registrytest.Script {
	return registrytest.Returning(pressure.Observation{
		Replicas: []pressure.ReplicaObservation{{Name: "a"}},
		Queue:    &pressure.QueueObservation{Backlog: []pressure.ClassBacklog{{Class: "default", Ready: 120}}},
	})
}

type eventView struct {
	Time   time.Time          `json:"time"`
	Target string             `json:"target"`
	Policy string             `json:"policy"`
	Action string             `json:"action"`
	Reason string             `json:"reason"`
	Before int                `json:"before"`
	After  int                `json:"after"`
	Inputs map[string]float64 `json:"inputs"`
	// ScaledObject is the reader the event is rendered for; Repeats the
	// no-ops folded into it.
	ScaledObject string `json:"scaledObject"`
	Repeats      int    `json:"repeats"`
}

func TestEventsServeTheAuditTrail(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{"busy": busy(), "jobs": jobs()})
	def := f.use(t, registry.Ref{}, script("busy"))
	raw := script("jobs")
	raw["policy"], raw["costPerReplicaSecond"] = "queue", "0.5"
	delete(raw, "profile") // a pressure key
	q := f.use(t, registry.Ref{Namespace: "shop", Name: "jobs"}, raw)

	r := f.get(t, "/events/shop/jobs")
	if r.code != http.StatusOK {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	ev := decode[[]eventView](t, r)
	if len(ev) != 1 {
		t.Fatalf("events %+v, want the first decision", ev)
	}
	if e := ev[0]; e.Target != q.Key || e.ScaledObject != "shop/jobs" || e.Policy != "queue" || e.Action != "scale_up" || e.Before != 1 || e.After != 4 ||
		!e.Time.Equal(f.clock.Now()) || e.Inputs["drain"] != 4 || e.Reason == "" {
		t.Errorf("event %+v", e)
	}
	if got := keys(t, decode[[]json.RawMessage](t, r)[0]); !slices.Equal(got, []string{"time", "target", "scaledObject", "policy", "action", "reason", "before", "after", "inputs"}) {
		t.Errorf("event keys %v", got)
	}

	// The pressure target's samples are decisions too.
	all := decode[[]eventView](t, f.get(t, "/events"))
	if len(all) != 2 || all[0].Target > all[1].Target {
		t.Fatalf("all events %+v, want one per target, by target within an instant", all)
	}
	for _, e := range all {
		if e.Target == def.Key && (e.Policy != "pressure" || e.Action != "scale_up" || e.Before != 0 || e.After != 2) {
			t.Errorf("pressure event %+v, want scale_up 0 -> 2", e)
		}
	}

	f.clock.Tick(t, interval)
	registrytest.WaitSamples(t, q, 2)
	registrytest.WaitSamples(t, def, 2)
	// The pressure target's steady second sample is counted into its
	// first decision; the queue's held no-op follows a change of reason.
	all = decode[[]eventView](t, f.get(t, "/events"))
	if len(all) != 3 || !all[2].Time.After(all[0].Time) {
		t.Fatalf("after a tick: %+v, want 3 events, newest last", all)
	}
	for _, e := range all {
		if e.Target == def.Key && e.Repeats != 1 {
			t.Errorf("pressure event %+v, want its steady second sample counted into it", e)
		}
	}
	ev = decode[[]eventView](t, f.get(t, "/events/shop/jobs"))
	if len(ev) != 2 || ev[1].Action != "no-op" || ev[1].Before != 4 {
		t.Errorf("second decision %+v, want a no-op at 4 (3 launches in flight)", ev)
	}

	// /scale carries the decision and the cost: 1 replica for 5 s at 0.5.
	v := decode[struct {
		ScaleValue float64 `json:"scaleValue"`
		Policy     string  `json:"policy"`
		Action     string  `json:"action"`
		Cost       struct {
			ReplicaSeconds float64 `json:"replicaSeconds"`
			Cost           float64 `json:"cost"`
		} `json:"cost"`
	}](t, f.get(t, "/scale/shop/jobs"))
	if v.ScaleValue != 4 || v.Policy != "queue" || v.Action != "no-op" || v.Cost.ReplicaSeconds != 5 || v.Cost.Cost != 2.5 {
		t.Errorf("/scale %+v", v)
	}

	wantError(t, f.get(t, "/events/shop/nope"), http.StatusNotFound, "shop/nope")
}

func TestEventsEmptyIsAnArray(t *testing.T) {
	f := newFixture(t, nil)
	if r := f.get(t, "/events"); r.code != http.StatusOK || string(r.body) != "[]\n" {
		t.Errorf("/events with no target: %d %q", r.code, r.body)
	}
}
