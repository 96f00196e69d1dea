package policy

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func newQueue(t *testing.T, mutate func(*QueueOptions)) *QueuePolicy {
	t.Helper()
	o := DefaultQueueOptions()
	if mutate != nil {
		mutate(&o)
	}
	p, err := NewQueuePolicy(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// noisy multiplies at run time, where 0.1 x 6 is 0.6000000000000001, not
// the exact product constant arithmetic would give.
func noisy(a, b float64) float64 { return a * b }

// gauge is a desired count set through the plain reservation gauge, which
// adds to the formula and nothing else: handy to drive the step rules.
func gauge(n int) []Reservation { return []Reservation{{Slots: n}} }

func TestQueueTerms(t *testing.T) {
	classes := func(cs ...Class) func(*QueueOptions) {
		return func(o *QueueOptions) { o.Classes = cs }
	}
	tests := []struct {
		name          string
		opts          func(*QueueOptions)
		rate, service float64
		obs           QueueObservation
		// base, drain, slo, busy, reserved, desired
		want [6]int
	}{
		{"base = ceil(rate x service / 0.75)", nil, 3, 1, QueueObservation{}, [6]int{4, 0, 0, 0, 0, 4}},
		{"base rounds up", nil, 1, 1, QueueObservation{}, [6]int{2, 0, 0, 0, 0, 2}},
		{"base ignores float noise", nil, 1.25, noisy(0.1, 6), QueueObservation{}, [6]int{1, 0, 0, 0, 0, 1}},
		{"rate below the 0.01 cut-off is zero", nil, 0.0099, 100, QueueObservation{}, [6]int{0, 0, 0, 0, 0, 0}},
		{"rate at the cut-off counts", nil, 0.01, 100, QueueObservation{}, [6]int{2, 0, 0, 0, 0, 2}},
		{"target utilization is an option", func(o *QueueOptions) { o.TargetUtilization = 0.5 }, 3, 1, QueueObservation{}, [6]int{6, 0, 0, 0, 0, 6}},
		{"drain = ceil(backlog x service / 30s), ready plus retrying", nil, 0, 6,
			QueueObservation{Backlog: []ClassBacklog{{Class: "x", Ready: 10, Retrying: 5}}}, [6]int{0, 3, 0, 0, 0, 3}},
		{"drain rounds up", nil, 0, 1, QueueObservation{Backlog: []ClassBacklog{{Ready: 1}}}, [6]int{0, 1, 0, 0, 0, 1}},
		{"base and drain add", nil, 3, 1, QueueObservation{Backlog: []ClassBacklog{{Ready: 45}}}, [6]int{4, 2, 0, 0, 0, 6}},
		{"slo of a class covers higher classes' backlog",
			classes(Class{"critical", 10 * time.Second}, Class{"normal", 20 * time.Second}), 0, 5,
			QueueObservation{Backlog: []ClassBacklog{{Class: "critical", Ready: 2}, {Class: "normal", Ready: 4}}},
			[6]int{0, 1, 2, 0, 0, 2}},
		{"a class without backlog has no slo term",
			classes(Class{"critical", 100 * time.Second}, Class{"low", time.Second}), 0, 1,
			QueueObservation{Backlog: []ClassBacklog{{Class: "critical", Ready: 3}}},
			[6]int{0, 1, 1, 0, 0, 1}},
		{"a class without an slo has no term but ranks",
			classes(Class{"critical", time.Second}, Class{"batch", 0}), 0, 1,
			QueueObservation{Backlog: []ClassBacklog{{Class: "critical", Ready: 3}, {Class: "batch", Ready: 100}}},
			[6]int{0, 4, 3, 0, 0, 4}},
		{"an unlisted class counts in drain only",
			classes(Class{"critical", 10 * time.Second}), 0, 10,
			QueueObservation{Backlog: []ClassBacklog{{Class: "other", Ready: 20}, {Class: "critical", Ready: 1}}},
			[6]int{0, 7, 1, 0, 0, 7}},
		{"due fixed-start work counts as the highest class",
			classes(Class{"critical", 10 * time.Second}, Class{"normal", 0}), 0, 5,
			QueueObservation{Due: 4}, [6]int{0, 1, 2, 0, 0, 2}},
		{"entries of one class add up",
			classes(Class{"critical", 5 * time.Second}), 0, 5,
			QueueObservation{Backlog: []ClassBacklog{{Class: "critical", Ready: 2}, {Class: "critical", Retrying: 3}}},
			[6]int{0, 1, 5, 0, 0, 5}},
		{"busy alone", nil, 0, 1, QueueObservation{Busy: 7}, [6]int{0, 0, 0, 7, 0, 7}},
		{"max of base + drain, slo and busy",
			classes(Class{"critical", time.Second}), 1, 1,
			QueueObservation{Busy: 4, Backlog: []ClassBacklog{{Class: "critical", Ready: 5}}},
			[6]int{2, 1, 5, 4, 0, 5}},
		{"reserved adds on top", nil, 1.5, 1, QueueObservation{Busy: 1, Reservations: gauge(3)}, [6]int{2, 0, 0, 1, 3, 5}},
		{"clamped to min", func(o *QueueOptions) { o.MinReplicas = 2 }, 0, 1, QueueObservation{}, [6]int{0, 0, 0, 0, 0, 2}},
		{"clamped to max", func(o *QueueOptions) { o.MaxReplicas = 5 }, 0, 1, QueueObservation{Busy: 9}, [6]int{0, 0, 0, 9, 0, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newQueue(t, tt.opts).terms(tt.obs, tt.rate, tt.service, t0)
			have := [6]int{got.base, got.drain, got.slo, got.busy, got.reserved, got.desired}
			if have != tt.want {
				t.Errorf("base, drain, slo, busy, reserved, desired = %v, want %v", have, tt.want)
			}
		})
	}
}

func TestReservationPeakWithinHorizon(t *testing.T) {
	span := func(from, to float64, slots int) Reservation {
		return Reservation{Start: at(from), End: at(to), Slots: slots}
	}
	tests := []struct {
		name string
		rs   []Reservation
		want int
	}{
		{"none", nil, 0},
		{"a gauge is open-ended and active now", gauge(3), 3},
		{"overlapping intervals add", []Reservation{span(10, 30, 2), span(20, 40, 3)}, 5},
		{"the peak, not the sum", []Reservation{span(0, 10, 2), span(20, 30, 3), span(40, 50, 1)}, 3},
		{"back-to-back intervals do not overlap", []Reservation{span(10, 20, 2), span(20, 30, 3)}, 3},
		{"starting at the horizon's end counts", []Reservation{span(60, 90, 4)}, 4},
		{"starting after the horizon does not", []Reservation{span(61, 90, 4)}, 0},
		{"ended exactly now does not count", []Reservation{span(-30, 0, 2)}, 0},
		{"started before now and running counts", []Reservation{span(-30, 10, 2)}, 2},
		{"open start", []Reservation{{End: at(5), Slots: 2}}, 2},
		{"zero slots count nothing", []Reservation{span(0, 10, 0)}, 0},
		{"an empty interval does not hide another's peak", []Reservation{span(15, 25, 3), span(30, 10, 5)}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := peakReservations(tt.rs, t0, at(60)); got != tt.want {
				t.Errorf("peak = %d, want %d", got, tt.want)
			}
		})
	}
	t.Run("horizon is an option", func(t *testing.T) {
		p := newQueue(t, func(o *QueueOptions) { o.ReservationHorizon = 0 })
		d, _ := p.Evaluate(QueueState{}, QueueObservation{Reservations: []Reservation{span(1, 10, 4), span(-1, 1, 1)}}, t0)
		if d.Inputs["reserved"] != 1 {
			t.Errorf("reserved = %v, want 1 (only what is active now)", d.Inputs["reserved"])
		}
	})
}

// evalSeq runs observations through the policy and returns every decision.
func evalSeq(p *QueuePolicy, times []float64, obs []QueueObservation) []Decision {
	var st QueueState
	out := make([]Decision, len(obs))
	for i := range obs {
		out[i], st = p.Evaluate(st, obs[i], at(times[i]))
	}
	return out
}

func TestArrivalRateEWMA(t *testing.T) {
	times := []float64{0, 10, 20, 30, 30, 40}
	counts := []float64{100, 130, 130, 10, 50, 50}
	want := []float64{
		0,                   // no rate before a second reading
		3,                   // 30 in 10 s seeds the average
		2.1,                 // 0.3 x 0 + 0.7 x 3
		1.77,                // counter reset: 10 arrivals since the restart, 1/s
		1.77,                // no time elapsed: unchanged
		1.77 + 0.3*(4-1.77), // 40 over the 10 s since the last usable reading
	}
	obs := make([]QueueObservation, len(counts))
	for i, c := range counts {
		obs[i] = QueueObservation{Arrivals: c}
	}
	for i, d := range evalSeq(newQueue(t, nil), times, obs) {
		if !near(d.Inputs["arrival_rate"], want[i]) {
			t.Errorf("evaluation %d: rate %v, want %v", i, d.Inputs["arrival_rate"], want[i])
		}
	}
}

func TestRateDecaysPastTheCutoff(t *testing.T) {
	// A burst seeds 1/s; with no more arrivals the average decays by 0.7 per
	// evaluation and never reaches zero, so the cut-off ends the base term:
	// 0.7^12 = 0.0138 still asks for a replica, 0.7^13 = 0.0097 does not.
	p := newQueue(t, nil)
	st := QueueState{}
	_, st = p.Evaluate(st, QueueObservation{Arrivals: 0}, at(0))
	d, st := p.Evaluate(st, QueueObservation{Arrivals: 1}, at(1))
	for i := 1; i <= 13; i++ {
		d, st = p.Evaluate(st, QueueObservation{Arrivals: 1}, at(float64(1+i)))
		wantBase := 1.0
		if i == 13 {
			wantBase = 0
		}
		if i >= 12 && d.Inputs["base"] != wantBase {
			t.Errorf("after %d idle evaluations: rate %v base %v, want base %v", i, d.Inputs["arrival_rate"], d.Inputs["base"], wantBase)
		}
	}
	if d.Inputs["arrival_rate"] <= 0 {
		t.Errorf("the smoothed rate reached %v; it only decays toward zero", d.Inputs["arrival_rate"])
	}
}

func TestServiceTimeEWMA(t *testing.T) {
	p := newQueue(t, func(o *QueueOptions) { o.DefaultServiceTime = 2 * time.Second })
	runs := []struct{ count, sum, want float64 }{
		{0, 0, 2},                     // the default before any run
		{1, 4, 4},                     // the first run seeds the average
		{2, 5, 4 + 0.3*(1-4)},         // one run of 1 s
		{4, 7, 3.1 + 0.51*(1-3.1)},    // two runs of 1 s: weight 1 - 0.7^2
		{1, 3, 2.029 + 0.3*(3-2.029)}, // histogram reset: one run of 3 s
		{1, 3, 2.029 + 0.3*(3-2.029)}, // no new run: unchanged
	}
	obs := make([]QueueObservation, len(runs))
	times := make([]float64, len(runs))
	for i, r := range runs {
		obs[i], times[i] = QueueObservation{Runs: r.count, RunSeconds: r.sum}, float64(10*i)
	}
	for i, d := range evalSeq(p, times, obs) {
		if !near(d.Inputs["service_seconds"], runs[i].want) {
			t.Errorf("evaluation %d: service %v, want %v", i, d.Inputs["service_seconds"], runs[i].want)
		}
	}
	t.Run("the first evaluation folds the counters' history", func(t *testing.T) {
		d, _ := p.Evaluate(QueueState{}, QueueObservation{Runs: 10, RunSeconds: 50}, t0)
		if d.Inputs["service_seconds"] != 5 {
			t.Errorf("service %v, want the lifetime mean 5", d.Inputs["service_seconds"])
		}
	})
}

func TestStepUpLimit(t *testing.T) {
	tests := []struct {
		name             string
		opts             func(*QueueOptions)
		current, desired int
		want             int
		limited          bool
	}{
		{"absolute step wins when small", nil, 2, 20, 6, true},
		{"ratio wins when large (+100%)", nil, 10, 50, 20, true},
		{"ratio is an option", func(o *QueueOptions) { o.MaxStepUpRatio = 0.5 }, 10, 50, 15, true},
		{"absolute step is an option", func(o *QueueOptions) { o.MaxStepUpAbs = 1; o.MaxStepUpRatio = 0 }, 10, 50, 11, true},
		{"from zero the absolute step applies", nil, 0, 20, 4, true},
		{"within the limit goes straight to desired", nil, 0, 3, 3, false},
		{"ratio ignores float noise", func(o *QueueOptions) { o.MaxStepUpRatio = noisy(0.1, 3); o.MaxStepUpAbs = 1 }, 10, 50, 13, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _ := newQueue(t, tt.opts).Evaluate(QueueState{}, QueueObservation{Replicas: tt.current, Reservations: gauge(tt.desired)}, t0)
			if d.Action != ScaleUp || d.Desired != tt.want || d.Before != tt.current {
				t.Fatalf("got %s %d -> %d, want scale_up %d -> %d (%s)", d.Action, d.Before, d.Desired, tt.current, tt.want, d.Reason)
			}
			if strings.Contains(d.Reason, "step limit") != tt.limited {
				t.Errorf("reason %q: step limit mentioned = %v, want %v", d.Reason, !tt.limited, tt.limited)
			}
		})
	}
}

// queueStep is one evaluation of a scaling sequence.
type queueStep struct {
	at                float64
	replicas, desired int
	busy              int
	action            Action
	want              int
	reason            string // a substring of the reason
}

func runQueueSteps(t *testing.T, p *QueuePolicy, steps []queueStep) {
	t.Helper()
	var st QueueState
	for i, s := range steps {
		var d Decision
		d, st = p.Evaluate(st, QueueObservation{Replicas: s.replicas, Busy: s.busy, Reservations: gauge(s.desired)}, at(s.at))
		if d.Action != s.action || d.Desired != s.want || !strings.Contains(d.Reason, s.reason) {
			t.Errorf("step %d at %vs: %s -> %d (%q); want %s -> %d with %q", i, s.at, d.Action, d.Desired, d.Reason, s.action, s.want, s.reason)
		}
	}
}

func TestScaleDownWindowAndCooldown(t *testing.T) {
	runQueueSteps(t, newQueue(t, nil), []queueStep{
		{at: 0, replicas: 10, desired: 10, action: NoOp, want: 10, reason: "no-op: at desired 10"},
		{at: 15, replicas: 10, desired: 2, action: NoOp, want: 10, reason: "held at 10, the highest desired in the last 1m0s"},
		{at: 59, replicas: 10, desired: 2, action: NoOp, want: 10, reason: "held at 10"},
		// The 10 seen at 0 s is now 60 s old and out of the window.
		{at: 60, replicas: 10, desired: 2, action: ScaleDown, want: 9, reason: "scale_down 10 -> 9"},
		{at: 75, replicas: 9, desired: 2, action: NoOp, want: 9, reason: "cooldown, 15s of 30s left"},
		{at: 90, replicas: 9, desired: 2, action: ScaleDown, want: 8, reason: "scale_down 9 -> 8"},
	})
}

func TestScaleDownGoesOnlyToTheWindowMax(t *testing.T) {
	p := newQueue(t, func(o *QueueOptions) { o.MaxStepDown = 5 })
	runQueueSteps(t, p, []queueStep{
		{at: 0, replicas: 10, desired: 10, action: NoOp, want: 10},
		{at: 10, replicas: 10, desired: 7, action: NoOp, want: 10, reason: "held at 10"},
		{at: 20, replicas: 10, desired: 3, action: NoOp, want: 10, reason: "held at 10"},
		{at: 61, replicas: 10, desired: 3, action: ScaleDown, want: 7, reason: "scale_down 10 -> 7"},
		{at: 71, replicas: 7, desired: 3, action: NoOp, want: 7, reason: "cooldown"},
		{at: 91, replicas: 7, desired: 3, action: ScaleDown, want: 3, reason: "scale_down 7 -> 3"},
	})
}

func TestFirstEvaluationHoldsTheCurrentCount(t *testing.T) {
	runQueueSteps(t, newQueue(t, nil), []queueStep{
		{at: 0, replicas: 10, desired: 2, action: NoOp, want: 10, reason: "held at 10"},
		{at: 59.9, replicas: 10, desired: 2, action: NoOp, want: 10, reason: "held at 10"},
		{at: 60, replicas: 10, desired: 2, action: ScaleDown, want: 9},
	})
}

func TestScaleUpIsImmediateAndStartsNoCooldown(t *testing.T) {
	p := newQueue(t, func(o *QueueOptions) { o.StabilizationWindow = 0 })
	runQueueSteps(t, p, []queueStep{
		{at: 0, replicas: 2, desired: 6, action: ScaleUp, want: 6},
		{at: 1, replicas: 6, desired: 5, action: ScaleDown, want: 5},
		{at: 2, replicas: 5, desired: 4, action: NoOp, want: 5, reason: "cooldown, 29s of 30s left"},
		{at: 3, replicas: 5, desired: 9, action: ScaleUp, want: 9},
	})
}

func TestScaleDownNeverBelowBusy(t *testing.T) {
	// MaxReplicas 3 clamps the desired count under the busy count; the
	// scale-down still stops at the busy count.
	p := newQueue(t, func(o *QueueOptions) {
		o.MaxReplicas, o.StabilizationWindow, o.ScaleDownCooldown, o.MaxStepDown = 3, 0, 0, 10
	})
	runQueueSteps(t, p, []queueStep{
		{at: 0, replicas: 8, busy: 5, action: ScaleDown, want: 5, reason: "clamped to 3; scale_down 8 -> 5"},
		{at: 1, replicas: 5, busy: 5, action: NoOp, want: 5, reason: "no-op: scale-down held by 5 busy"},
		{at: 2, replicas: 5, busy: 4, action: ScaleDown, want: 4},
	})
}

func TestInFlightCountsAsCurrent(t *testing.T) {
	tests := []struct {
		replicas, inFlight, desired int
		action                      Action
		before, want                int
		reason                      string
	}{
		{2, 4, 6, NoOp, 6, 6, "; current 6 = 2 seen +4 in flight; no-op: at desired 6"},
		{6, -2, 4, NoOp, 4, 4, "; current 4 = 6 seen -2 leaving; no-op: at desired 4"},
		{6, -2, 5, ScaleUp, 4, 5, "; current 4 = 6 seen -2 leaving; scale_up 4 -> 5"},
		{1, -3, 0, NoOp, 0, 0, "; current 0 = 1 seen -3 leaving; no-op: at desired 0"},
	}
	for _, tt := range tests {
		obs := QueueObservation{Replicas: tt.replicas, InFlight: tt.inFlight, Reservations: gauge(tt.desired)}
		d, _ := newQueue(t, func(o *QueueOptions) { o.MinReplicas = 0 }).Evaluate(QueueState{}, obs, t0)
		if d.Action != tt.action || d.Before != tt.before || d.Desired != tt.want || !strings.HasSuffix(d.Reason, tt.reason) {
			t.Errorf("%d seen %+d: %s %d -> %d (%q); want %s %d -> %d ending %q", tt.replicas, tt.inFlight,
				d.Action, d.Before, d.Desired, d.Reason, tt.action, tt.before, tt.want, tt.reason)
		}
	}
}

func TestQueueReasonAndInputs(t *testing.T) {
	d, _ := newQueue(t, nil).Evaluate(QueueState{}, QueueObservation{Busy: 1, Backlog: []ClassBacklog{{Ready: 60}}}, t0)
	want := "queue: rate 0.00/s, service 1.00s, backlog 60; max(base 0 + drain 2, slo 0, busy 1) + reserved 0 = 2; scale_up 0 -> 2"
	if d.Reason != want {
		t.Errorf("reason\n got %q\nwant %q", d.Reason, want)
	}
	if d.Policy != PolicyQueue || d.At != t0 || d.Inputs["drain"] != 2 || d.Inputs["backlog"] != 60 || d.Inputs["desired"] != 2 {
		t.Errorf("decision %+v", d)
	}
	d, _ = newQueue(t, func(o *QueueOptions) { o.Classes = []Class{{"critical", time.Second}} }).
		Evaluate(QueueState{}, QueueObservation{Backlog: []ClassBacklog{{Class: "critical", Ready: 3}}}, t0)
	if !strings.Contains(d.Reason, "slo 3 (critical)") {
		t.Errorf("reason %q does not name the class behind the slo term", d.Reason)
	}
}

func TestEvaluateIsPure(t *testing.T) {
	p := newQueue(t, nil)
	var st QueueState
	for i := range 5 {
		_, st = p.Evaluate(st, QueueObservation{Replicas: 4, Arrivals: float64(10 * i), Reservations: gauge(4 - i)}, at(float64(10*i)))
	}
	obs := QueueObservation{Replicas: 4, Arrivals: 70, Runs: 3, RunSeconds: 6, Reservations: gauge(1)}
	d1, n1 := p.Evaluate(st, obs, at(55))
	d2, n2 := p.Evaluate(st, obs, at(55))
	if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(n1, n2) {
		t.Errorf("the same (state, observation, now) decided differently:\n%+v\n%+v", d1, d2)
	}
}

func TestQueueOptionsValidate(t *testing.T) {
	if err := DefaultQueueOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	tests := []struct {
		field  string
		mutate func(*QueueOptions)
	}{
		{"EwmaAlpha", func(o *QueueOptions) { o.EwmaAlpha = 0 }},
		{"EwmaAlpha", func(o *QueueOptions) { o.EwmaAlpha = 1.5 }},
		{"DefaultServiceTime", func(o *QueueOptions) { o.DefaultServiceTime = 0 }},
		{"TargetUtilization", func(o *QueueOptions) { o.TargetUtilization = 0 }},
		{"TargetUtilization", func(o *QueueOptions) { o.TargetUtilization = 1.01 }},
		{"RateCutoff", func(o *QueueOptions) { o.RateCutoff = -1 }},
		{"DrainTime", func(o *QueueOptions) { o.DrainTime = 0 }},
		{"Classes", func(o *QueueOptions) { o.Classes = []Class{{Name: ""}} }},
		{"Classes", func(o *QueueOptions) { o.Classes = []Class{{Name: "a"}, {Name: "a"}} }},
		{"Classes", func(o *QueueOptions) { o.Classes = []Class{{Name: "a", SLO: -time.Second}} }},
		{"ReservationHorizon", func(o *QueueOptions) { o.ReservationHorizon = -1 }},
		{"MinReplicas", func(o *QueueOptions) { o.MinReplicas = -1 }},
		{"MaxReplicas", func(o *QueueOptions) { o.MinReplicas, o.MaxReplicas = 3, 2 }},
		{"MaxStepUpRatio", func(o *QueueOptions) { o.MaxStepUpRatio = -0.5 }},
		{"MaxStepUpAbs", func(o *QueueOptions) { o.MaxStepUpAbs = 0 }},
		{"StabilizationWindow", func(o *QueueOptions) { o.StabilizationWindow = -1 }},
		{"MaxStepDown", func(o *QueueOptions) { o.MaxStepDown = 0 }},
		{"ScaleDownCooldown", func(o *QueueOptions) { o.ScaleDownCooldown = -1 }},
	}
	for _, tt := range tests {
		o := DefaultQueueOptions()
		tt.mutate(&o)
		wantField(t, o.Validate(), tt.field)
		if _, err := NewQueuePolicy(o); err == nil {
			t.Errorf("NewQueuePolicy accepted an invalid %s", tt.field)
		}
	}
}

// The arrival rate's time base is when the counters were read: a sample
// decided late measures the interval it read, not the one it was decided in.
func TestArrivalRateUsesObservedAt(t *testing.T) {
	p := newQueue(t, nil)
	var st QueueState
	var d Decision
	for _, x := range []struct{ read, decided float64 }{{0, 0.1}, {5, 9}, {10, 10.1}, {20, 20}} {
		// ObservedAt zero (the last) means the evaluation's time.
		obs := QueueObservation{Arrivals: 10 * x.read}
		if x.read != 20 {
			obs.ObservedAt = at(x.read)
		}
		d, st = p.Evaluate(st, obs, at(x.decided))
		if x.read > 0 && !near(d.Inputs["arrival_rate"], 10) {
			t.Errorf("read at %gs, decided at %gs: rate %v, want 10", x.read, x.decided, d.Inputs["arrival_rate"])
		}
	}
	if !d.At.Equal(at(20)) {
		t.Errorf("decision at %v, want the evaluation's time", d.At)
	}
}

// A counter that is not a finite number (a sum past MaxFloat64 read as
// +Inf, NaN), or a sample that comes out non-finite (MaxFloat64 less
// -MaxFloat64), is dropped: it would poison the averages for good, and
// Inputs must stay JSON numbers.
func TestNonFiniteCountersAreDropped(t *testing.T) {
	inf, nan, huge := math.Inf(1), math.NaN(), math.MaxFloat64
	steps := []struct {
		obs           QueueObservation
		rate, service float64
	}{
		{QueueObservation{Arrivals: 0, Runs: 1, RunSeconds: 2}, 0, 2},
		{QueueObservation{Arrivals: 10, Runs: 2, RunSeconds: 4}, 1, 2},
		{QueueObservation{Arrivals: inf, Runs: inf, RunSeconds: inf}, 1, 2},                                           // dropped: the older readings stand
		{QueueObservation{Arrivals: nan, Runs: 3, RunSeconds: nan}, 1, 2},                                             // dropped
		{QueueObservation{Arrivals: 40, Runs: 3, RunSeconds: 6}, 1, 2},                                                // 30 in the 30 s since 10 s; one run of 2 s
		{QueueObservation{Arrivals: -huge, Runs: 4, RunSeconds: -huge}, 0.7, 2},                                       // counters that fell: restarts, no arrival, no run time
		{QueueObservation{Arrivals: huge, Runs: 5, RunSeconds: huge}, 0.7, 2},                                         // increases of +Inf: dropped
		{QueueObservation{Arrivals: 70, Runs: 6, RunSeconds: 3}, 0.7 + 0.3*(7-0.7), 2 + (1-math.Pow(0.7, 6))*(0.5-2)}, // restarts
	}
	p := newQueue(t, nil)
	var st QueueState
	for i, s := range steps {
		var d Decision
		d, st = p.Evaluate(st, s.obs, at(float64(10*i)))
		if !near(d.Inputs["arrival_rate"], s.rate) || !near(d.Inputs["service_seconds"], s.service) {
			t.Errorf("step %d: rate %v service %v, want %v %v", i, d.Inputs["arrival_rate"], d.Inputs["service_seconds"], s.rate, s.service)
		}
		for k, v := range d.Inputs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("step %d: input %s = %v", i, k, v)
			}
		}
		if _, err := json.Marshal(d.Inputs); err != nil {
			t.Errorf("step %d: %v", i, err)
		}
	}
}

// With SlotsPerReplica, the formula's terms are slots and desired is
// ceil(slots / SlotsPerReplica) replicas; busy floors a scale-down in
// replicas too.
func TestSlotsPerReplica(t *testing.T) {
	p := newQueue(t, func(o *QueueOptions) {
		o.SlotsPerReplica, o.StabilizationWindow, o.ScaleDownCooldown, o.MaxStepDown = 4, 0, 0, 10
	})
	// 180 ready at 1 s with a 30 s drain time: 6 slots, 2 replicas; 9
	// busy: 3 replicas.
	d, _ := p.Evaluate(QueueState{}, QueueObservation{Backlog: []ClassBacklog{{Ready: 180}}}, t0)
	want := "max(base 0 + drain 6, slo 0, busy 0) + reserved 0 = 6 slots / 4 per replica = 2; scale_up 0 -> 2"
	if d.Desired != 2 || !strings.HasSuffix(d.Reason, want) || d.Inputs["desired"] != 2 || d.Inputs["slots_per_replica"] != 4 {
		t.Errorf("%s to %d (%q, %v), want 2 replicas for 6 slots", d.Action, d.Desired, d.Reason, d.Inputs)
	}
	d, _ = p.Evaluate(QueueState{started: true}, QueueObservation{Replicas: 8, Busy: 9, Reservations: gauge(1)}, t0)
	if d.Action != ScaleDown || d.Desired != 3 {
		t.Errorf("9 busy slots on 8 replicas: %s to %d (%q), want down to 3", d.Action, d.Desired, d.Reason)
	}
	p = newQueue(t, func(o *QueueOptions) { o.SlotsPerReplica, o.MaxReplicas = 4, 1 })
	d, _ = p.Evaluate(QueueState{started: true}, QueueObservation{Replicas: 3, Busy: 9}, t0)
	if d.Action != NoOp || !strings.Contains(d.Reason, "clamped to 1; no-op: scale-down held by 3 busy") {
		t.Errorf("9 busy slots on 3 replicas: %s (%q), want held", d.Action, d.Reason)
	}
	// 0 reads as 1, so options built field by field need not set it.
	o := DefaultQueueOptions()
	o.SlotsPerReplica = 0
	if d, _ := newQueue(t, func(o *QueueOptions) { o.SlotsPerReplica = 0 }).Evaluate(QueueState{}, QueueObservation{Busy: 3}, t0); d.Desired != 3 {
		t.Errorf("SlotsPerReplica 0: desired %d, want 3 (one slot per replica)", d.Desired)
	}
	o.SlotsPerReplica = -1
	wantField(t, o.Validate(), "SlotsPerReplica")
}
