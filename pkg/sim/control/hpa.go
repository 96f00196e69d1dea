package control

import (
	"math"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// PolicyType is an HPA scaling policy's unit.
type PolicyType int

// The HPA's policy types.
const (
	PodsPolicy PolicyType = iota
	PercentPolicy
)

// HPAPolicy limits the change within one period.
type HPAPolicy struct {
	Type   PolicyType
	Value  int
	Period time.Duration
}

// SelectPolicy picks among the policies' limits.
type SelectPolicy int

// The HPA's select policies; Max (the largest change) is the default.
const (
	SelectMax SelectPolicy = iota
	SelectMin
	SelectDisabled
)

// HPARules is one direction's behavior.
type HPARules struct {
	// StabilizationWindow: scale-up uses the lowest, scale-down the highest
	// recommendation within it.
	StabilizationWindow time.Duration
	Select              SelectPolicy
	Policies            []HPAPolicy
}

// HPAOptions is the HorizontalPodAutoscaler's tolerance and behavior.
type HPAOptions struct {
	// Tolerance: no change while |1 - metric/target| <= Tolerance.
	Tolerance float64
	ScaleUp   HPARules
	ScaleDown HPARules
}

// DefaultHPAOptions is Kubernetes' default behavior: tolerance 0.1; scale-up
// without stabilization, 100 % or 4 pods per 15 s, whichever is more;
// scale-down stabilized over 300 s, 100 % per 15 s.
func DefaultHPAOptions() HPAOptions {
	return HPAOptions{
		Tolerance: 0.1,
		ScaleUp: HPARules{Policies: []HPAPolicy{
			{Type: PercentPolicy, Value: 100, Period: 15 * time.Second},
			{Type: PodsPolicy, Value: 4, Period: 15 * time.Second},
		}},
		ScaleDown: HPARules{StabilizationWindow: 300 * time.Second, Policies: []HPAPolicy{
			{Type: PercentPolicy, Value: 100, Period: 15 * time.Second},
		}},
	}
}

type timedCount struct {
	n  int
	at time.Time
}

// HPA follows pkg/controller/podautoscaler: a resource-utilisation metric
// (the delivered occupancy against the target) times the ready pods, then
// stabilization and the rate policies of the behavior.
type HPA struct {
	model           sim.Model
	opts            HPAOptions
	recommendations []timedCount
	started         bool
	upEvents        []timedCount
	downEvents      []timedCount
}

// NewHPA returns the HPA's algorithm.
func NewHPA(m sim.Model, opts HPAOptions) *HPA { return &HPA{model: m, opts: opts} }

// Decide computes the metric's proposal and normalizes it with the behavior.
func (h *HPA) Decide(s sim.State) int {
	current := s.Replicas
	desired := current
	if ratio := s.Reading.Occupancy / h.model.Target; math.Abs(1-ratio) > h.opts.Tolerance {
		desired = int(math.Ceil(ratio * float64(s.Ready)))
	}
	return h.behave(desired, s)
}

// behave applies the behavior to the metric's proposal: the stabilization
// windows, then the rate policies and the replica bounds; it records the
// change.
func (h *HPA) behave(desired int, s sim.State) int {
	current := s.Replicas
	if !h.started && h.opts.ScaleDown.StabilizationWindow > 0 {
		// A new HPA seeds the scale-down window with the current size.
		h.recommendations = append(h.recommendations, timedCount{current, s.Now})
	}
	h.started = true
	desired = h.limitRate(h.stabilize(desired, current, s.Now), current, s.Now)
	switch {
	case desired > current:
		h.upEvents = h.record(h.upEvents, h.opts.ScaleUp, desired-current, s.Now)
	case desired < current:
		h.downEvents = h.record(h.downEvents, h.opts.ScaleDown, current-desired, s.Now)
	}
	return desired
}

// record stores a scale event and, as the HPA does, forgets the events
// older than the direction's longest policy period.
func (h *HPA) record(events []timedCount, r HPARules, n int, now time.Time) []timedCount {
	var longest time.Duration
	for _, p := range r.Policies {
		longest = max(longest, p.Period)
	}
	cut := now.Add(-longest)
	kept := events[:0]
	for _, e := range events {
		if e.at.After(cut) {
			kept = append(kept, e)
		}
	}
	return append(kept, timedCount{n, now})
}

// stabilize bounds the recommendation by the lowest one in the scale-up
// window and the highest one in the scale-down window, then records it.
func (h *HPA) stabilize(desired, current int, now time.Time) int {
	upCut := now.Add(-h.opts.ScaleUp.StabilizationWindow)
	downCut := now.Add(-h.opts.ScaleDown.StabilizationWindow)
	up, down := desired, desired
	kept := h.recommendations[:0]
	for _, r := range h.recommendations {
		if r.at.After(upCut) {
			up = min(up, r.n)
		}
		if r.at.After(downCut) {
			down = max(down, r.n)
		}
		if r.at.After(upCut) || r.at.After(downCut) {
			kept = append(kept, r)
		}
	}
	h.recommendations = append(kept, timedCount{desired, now})
	return min(down, max(up, current))
}

// limitRate applies the policies and the replica bounds.
func (h *HPA) limitRate(desired, current int, now time.Time) int {
	switch {
	case desired > current:
		limit := max(current, h.periodLimit(h.opts.ScaleUp, current, now, true))
		return min(desired, h.model.MaxReplicas, limit)
	case desired < current:
		limit := min(current, h.periodLimit(h.opts.ScaleDown, current, now, false))
		return max(desired, h.model.MinReplicas, limit)
	}
	return desired
}

// periodLimit is the farthest the policies let the count move from
// current: each policy measures from the count at the start of its period.
func (h *HPA) periodLimit(r HPARules, current int, now time.Time, up bool) int {
	if r.Select == SelectDisabled {
		return current
	}
	// Max selects the largest change: the highest limit up, the lowest down.
	takeMax := (r.Select == SelectMax) == up
	result := math.MinInt
	if !takeMax {
		result = math.MaxInt
	}
	for _, p := range r.Policies {
		start := current - changedSince(h.upEvents, now, p.Period) + changedSince(h.downEvents, now, p.Period)
		var proposed int
		switch {
		case p.Type == PodsPolicy && up:
			proposed = start + p.Value
		case p.Type == PodsPolicy:
			proposed = start - p.Value
		case up:
			proposed = int(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		default:
			proposed = int(float64(start) * (1 - float64(p.Value)/100))
		}
		if takeMax {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// changedSince sums the events after now - period.
func changedSince(events []timedCount, now time.Time, period time.Duration) int {
	cut, n := now.Add(-period), 0
	for _, e := range events {
		if e.at.After(cut) {
			n += e.n
		}
	}
	return n
}
