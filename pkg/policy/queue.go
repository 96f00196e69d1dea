package policy

import (
	"fmt"
	"strconv"
	"time"
)

// QueueObservation is what the queue-pressure policy reads at one
// evaluation. Counters are cumulative, as exported (raw counter values, not
// rates): the policy derives rates itself and handles counter resets.
type QueueObservation struct {
	// Replicas is the count of replicas visible now; InFlight the net change
	// not yet visible, launches less removals (LaunchTracker.Observe), so it
	// may be negative. "Current" is max(Replicas + InFlight, 0).
	Replicas, InFlight int
	// Arrivals counts work that became ready (a counter).
	Arrivals float64
	// RunSeconds and Runs are the sum and count of observed run times (a
	// histogram's _sum and _count).
	RunSeconds, Runs float64
	// Backlog is ready and retry-waiting work by class. Entries for the same
	// class add up, so one entry per series of each gauge is fine.
	Backlog []ClassBacklog
	// Due counts fixed-start work that is due, as backlog of the
	// highest-priority class.
	Due int
	// Busy counts work running now; a scale-down never goes below it.
	Busy int
	// Reservations booked ahead; only the peak within the horizon counts.
	Reservations []Reservation
	// ObservedAt is when the counters were read, the arrival rate's time
	// base; zero means the evaluation's time.
	ObservedAt time.Time
}

// ClassBacklog is one class's backlog.
type ClassBacklog struct {
	Class string
	// Ready work waits for a replica; Retrying work waits for its retry.
	Ready, Retrying int
}

// QueueState is what the policy remembers between evaluations. The zero
// value is the state before the first evaluation. It is a value: Evaluate
// returns a new one and never changes the one it was given.
type QueueState struct {
	started bool
	// The counters as last read, and when the arrivals counter was read.
	arrivals, runSeconds, runs float64
	arrivalsAt                 time.Time
	arrivalsRead               bool
	rate, service              float64 // per second; seconds
	rateSeeded, serviceSeeded  bool
	window                     []windowEntry
	lastScaleDown              time.Time // zero: never
}

// windowEntry is one desired count of the stabilization window.
type windowEntry struct {
	at      time.Time
	desired int
}

// QueuePolicy is the queue-pressure policy (docs/semantics.md, "The
// queue-pressure policy"). It holds only validated
// options, so it is safe for concurrent use; the state travels separately.
type QueuePolicy struct {
	opts QueueOptions
	rank map[string]int // class name -> priority, 0 highest
}

// NewQueuePolicy validates opts and returns the policy.
func NewQueuePolicy(opts QueueOptions) (*QueuePolicy, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	// A private copy: the caller's slice may change after validation.
	opts.Classes = append([]Class(nil), opts.Classes...)
	rank := make(map[string]int, len(opts.Classes))
	for i, c := range opts.Classes {
		rank[c.Name] = i
	}
	return &QueuePolicy{opts: opts, rank: rank}, nil
}

// queueTerms are the formula's terms at one evaluation: slots up to
// slots, replicas from raw on.
type queueTerms struct {
	rate, service            float64
	backlog                  int
	base, drain, slo, busy   int
	reserved, slots          int
	perReplica, busyReplicas int
	raw, desired             int
	sloClass                 string
}

// Evaluate decides one evaluation at now: a pure function of the state, the
// observation and now.
func (p *QueuePolicy) Evaluate(st QueueState, obs QueueObservation, now time.Time) (Decision, QueueState) {
	o := p.opts
	next := st
	next.estimate(o.EwmaAlpha, obs, now)
	t := p.terms(obs, next.rate, next.serviceTime(o.DefaultServiceTime), now)
	current := currentCount(obs.Replicas, obs.InFlight)

	window := st.window
	if !st.started {
		// As the HPA does, the first evaluation counts the current replicas
		// as desired: a restarted scaler has not seen the last window, so it
		// does not scale down until it has.
		window = []windowEntry{{now, current}}
	}
	next.window = record(window, now, t.desired, o.StabilizationWindow)
	next.started = true
	ceiling := windowMax(next.window)

	d := Decision{At: now, Policy: PolicyQueue, Action: NoOp, Before: current, Desired: current}
	var verdict string
	switch {
	case t.desired > current:
		// Up at once, but at most by the larger of the ratio and the
		// absolute step: the absolute step lets a small target grow fast.
		step := max(CeilCount(float64(current)*o.MaxStepUpRatio), o.MaxStepUpAbs)
		d.Action, d.Desired = ScaleUp, min(t.desired, satAdd(current, step))
		verdict = fmt.Sprintf("scale_up %d -> %d", current, d.Desired)
		if d.Desired < t.desired {
			verdict += fmt.Sprintf(" (step limit +%d)", step)
		}
	case t.desired == current:
		verdict = fmt.Sprintf("no-op: at desired %d", current)
	default:
		floor := max(ceiling, t.busyReplicas)
		sinceDown := now.Sub(st.lastScaleDown)
		switch {
		case floor >= current && t.busyReplicas > ceiling:
			verdict = fmt.Sprintf("no-op: scale-down held by %d busy", t.busyReplicas)
		case floor >= current:
			verdict = fmt.Sprintf("no-op: scale-down held at %d, the highest desired in the last %s", ceiling, o.StabilizationWindow)
		case !st.lastScaleDown.IsZero() && sinceDown < o.ScaleDownCooldown:
			verdict = fmt.Sprintf("no-op: scale-down cooldown, %s of %s left", o.ScaleDownCooldown-sinceDown, o.ScaleDownCooldown)
		default:
			d.Action, d.Desired = ScaleDown, max(floor, current-o.MaxStepDown)
			next.lastScaleDown = now
			verdict = fmt.Sprintf("scale_down %d -> %d", current, d.Desired)
		}
	}
	d.Reason = t.reason() + "; "
	if obs.InFlight != 0 {
		d.Reason += currentText(obs.Replicas, obs.InFlight) + "; "
	}
	d.Reason += verdict
	d.Inputs = map[string]float64{
		"replicas":          float64(obs.Replicas),
		"in_flight":         float64(obs.InFlight),
		"arrival_rate":      t.rate,
		"service_seconds":   t.service,
		"backlog":           float64(t.backlog),
		"base":              float64(t.base),
		"drain":             float64(t.drain),
		"slo":               float64(t.slo),
		"busy":              float64(t.busy),
		"reserved":          float64(t.reserved),
		"slots_per_replica": float64(t.perReplica),
		"desired":           float64(t.desired),
		"window_max":        float64(ceiling),
	}
	return d, next
}

// terms computes the queue policy's formula, in slots, and the replicas it needs:
//
//	slots   = max(base + drain, slo, busy) + reserved
//	desired = clamp(ceil(slots / SlotsPerReplica), min, max)
func (p *QueuePolicy) terms(obs QueueObservation, rate, service float64, now time.Time) queueTerms {
	o := p.opts
	t := queueTerms{rate: rate, service: service, busy: max(obs.Busy, 0)}
	if rate >= o.RateCutoff {
		t.base = CeilCount(rate * service / o.TargetUtilization)
	}
	byRank := p.backlogByRank(obs)
	for _, b := range byRank {
		t.backlog += b
	}
	t.drain = CeilCount(float64(t.backlog) * service / o.DrainTime.Seconds())
	// A class's SLO covers its own backlog and every higher class's, which
	// is served first.
	higher := 0
	for i, c := range o.Classes {
		higher += byRank[i]
		if c.SLO <= 0 || byRank[i] == 0 {
			continue
		}
		if v := CeilCount(float64(higher) * service / c.SLO.Seconds()); v > t.slo {
			t.slo, t.sloClass = v, c.Name
		}
	}
	t.reserved = peakReservations(obs.Reservations, now, now.Add(o.ReservationHorizon))
	t.slots = satAdd(max(satAdd(t.base, t.drain), t.slo, t.busy), t.reserved)
	t.perReplica = max(o.SlotsPerReplica, 1)
	t.raw, t.busyReplicas = ceilDiv(t.slots, t.perReplica), ceilDiv(t.busy, t.perReplica)
	t.desired = min(max(t.raw, o.MinReplicas), o.MaxReplicas)
	return t
}

// backlogByRank sums ready and retrying work per class rank; the last slot
// holds classes that are not listed, which rank below all listed ones.
func (p *QueuePolicy) backlogByRank(obs QueueObservation) []int {
	n := len(p.opts.Classes)
	by := make([]int, n+1)
	for _, b := range obs.Backlog {
		r, ok := p.rank[b.Class]
		if !ok {
			r = n
		}
		by[r] += max(b.Ready, 0) + max(b.Retrying, 0)
	}
	by[0] += max(obs.Due, 0)
	return by
}

func (t queueTerms) reason() string {
	slo := strconv.Itoa(t.slo)
	if t.sloClass != "" {
		slo += " (" + t.sloClass + ")"
	}
	s := fmt.Sprintf("queue: rate %.2f/s, service %.2fs, backlog %d; max(base %d + drain %d, slo %s, busy %d) + reserved %d = %d",
		t.rate, t.service, t.backlog, t.base, t.drain, slo, t.busy, t.reserved, t.slots)
	if t.perReplica > 1 {
		s += fmt.Sprintf(" slots / %d per replica = %d", t.perReplica, t.raw)
	}
	if t.desired != t.raw {
		s += fmt.Sprintf(", clamped to %d", t.desired)
	}
	return s
}

// record returns a new window (never sharing the old one's array, so the
// caller's state stays untouched) with v at now and without entries that
// are span or more old.
func record(w []windowEntry, now time.Time, v int, span time.Duration) []windowEntry {
	cutoff := now.Add(-span)
	out := make([]windowEntry, 0, len(w)+1)
	for _, e := range w {
		if e.at.After(cutoff) {
			out = append(out, e)
		}
	}
	return append(out, windowEntry{now, v})
}

func windowMax(w []windowEntry) int {
	m := 0
	for _, e := range w {
		m = max(m, e.desired)
	}
	return m
}

// ceilDiv is ceil(n / d) for n >= 0 and d >= 1.
func ceilDiv(n, d int) int {
	q := n / d
	if n%d != 0 {
		q++
	}
	return q
}

// satAdd adds two non-negative counts, saturating at Unbounded.
func satAdd(a, b int) int {
	if a > Unbounded-b {
		return Unbounded
	}
	return a + b
}
