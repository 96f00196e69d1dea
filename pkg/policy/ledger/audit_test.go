package ledger

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/policy"
)

func TestDecisionEvent(t *testing.T) {
	d := policy.Decision{At: t0, Policy: policy.PolicyQueue, Action: policy.ScaleUp, Before: 2, Desired: 6, Reason: "r", Inputs: map[string]float64{"base": 3}}
	b, err := json.Marshal(EventOf(d, "ns/w"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2026-11-30T00:00:00Z","target":"ns/w","policy":"queue","action":"scale_up","reason":"r","before":2,"after":6,"inputs":{"base":3}}`
	if string(b) != want {
		t.Errorf("event JSON\n got %s\nwant %s", b, want)
	}
}

// JSON has no NaN or Inf: an event with one would fail the whole /events
// answer, so such inputs are left out (and the decision's map is kept).
func TestEventLeavesOutNonFiniteInputs(t *testing.T) {
	in := map[string]float64{"base": 3, "nan": math.NaN(), "inf": math.Inf(1), "-inf": math.Inf(-1)}
	e := EventOf(policy.Decision{At: t0, Policy: policy.PolicyQueue, Action: policy.NoOp, Inputs: in}, "w")
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("event with non-finite inputs: %v", err)
	}
	if len(e.Inputs) != 1 || e.Inputs["base"] != 3 || len(in) != 4 {
		t.Errorf("inputs %v (decision's %v), want only base, the decision's untouched: %s", e.Inputs, in, b)
	}
}
