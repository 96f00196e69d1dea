package decide

import (
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// The gate holds the pressure's fall, not the compensation on top of it: a
// saturation surge that ends while the gate is closed still lowers the
// count (the surge must not ratchet; docs/compensation.md). The decision is
// then a scale_down, and its reason (the event's and /scale's) says why the
// count fell although the gate held, rather than only that it held.
func TestHeldScaleInThatStillFallsSaysWhy(t *testing.T) {
	e := NewEngine(Config{})
	s := spec(signal.PolicyPressure)
	s["profile"], s["scaleInGateWindow"], s["ewmaHalfLife"] = signal.ProfileResponsive, "2m", "30s"
	r := newRunner(t, e, "web", s)
	for i, c := range []struct {
		cpu    float64
		action policy.Action
		after  int
		why    bool
	}{
		{1, policy.ScaleUp, 2, false},     // saturated: the surge asks for 2n
		{0.85, policy.ScaleDown, 1, true}, // clearly unsaturated, the surge ends; the gate holds the pressure at 1.00
		{0.85, policy.NoOp, 1, false},     // held, and nothing falls
	} {
		// 20 s apart: the pool the surge asked for has not come a sync
		// after the ask, so it is held, not in transition, and a sample
		// of it ends the surge (docs/compensation.md, "A pool in
		// transition").
		sig := decideAt(t, r, at(float64(20*i)), sample(1, c.cpu, nil))
		if sig.Action != string(c.action) || sig.RecommendedReplicas != c.after {
			t.Fatalf("sample %d: %s to %d (%q); want %s to %d", i, sig.Action, sig.RecommendedReplicas, sig.Reason, c.action, c.after)
		}
		held := strings.Contains(sig.Reason, "held by safety gate")
		if why := strings.Contains(sig.Reason, heldButFell); why != c.why || i > 0 && !held {
			t.Errorf("sample %d: %s with reason %q; want the gate named, and why the count fell: %v", i, sig.Action, sig.Reason, c.why)
		}
		if ev := e.Events("web"); ev[len(ev)-1].Reason != sig.Reason {
			t.Errorf("sample %d: event reason %q, /scale's %q", i, ev[len(ev)-1].Reason, sig.Reason)
		}
	}
}
