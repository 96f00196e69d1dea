// Package policy holds Barometer's replica policies beside the pressure
// signal, as pure decisions: the queue-pressure policy (queue.go) and the
// elasticity policies (elasticity.go, pool.go), with the pieces around
// them: launch tracking (launch.go), the decision audit event (audit.go;
// the trail is the caller's) and cost accounting (cost.go). docs/semantics.md, "The elasticity policies" and
// "The queue-pressure policy", states their rules.
//
// A decision is a function of (state, observation, now), like the HPA's
// replica_calculator.go: the policies hold only validated options and are
// safe for concurrent use; the state is a value the caller keeps per target
// (or per pool) and replaces with the one returned. Nothing reads a clock.
// LaunchTracker is the only shared mutable type, and locks.
//
// Every decision says the replica count to publish (Decision.Desired). The
// KEDA side returns it with target 1 (AverageValue), so the HPA asks for
// exactly that count.
//
// # One evaluation of one target
//
//	inFlight := tracker.Observe(target, visible, now) // launches less removals
//	d, state = queue.Evaluate(state, QueueObservation{Replicas: visible, InFlight: inFlight, ...}, now)
//	tracker.Record(target, d)
//	audit.Record(d.Event(target))
//	cost = cost.Accrue(costOpts, visible, now)
//
// "Current" is always max(visible + inFlight, 0): the replicas seen plus the
// launches, less the removals, not yet seen. A decision only publishes a
// count and the source sees the HPA's answer late, so while a launch or
// removal is in flight a no-op publishes the count the last decision asked
// for, not the stale one the HPA would scale straight back to.
//
// # Queue inputs
//
// The queue policy reads raw counters and gauges, never rates; it derives
// the rates itself and treats a counter that falls as restarted from zero.
// A scrape or Prometheus source maps them like this (the names are the
// suggested defaults; PromQL sources must not wrap counters in rate()):
//
//	Arrivals      counter    queue_arrivals_total             work that became ready
//	RunSeconds    counter    queue_run_duration_seconds_sum   a histogram or summary
//	Runs          counter    queue_run_duration_seconds_count
//	Backlog       gauges     queue_ready{class="..."}         one ClassBacklog per series
//	                         queue_retrying{class="..."}
//	Due           gauge      queue_due_fixed_start            counted in the highest class
//	Busy          gauge      queue_busy
//	Reservations  gauges     queue_reservation_start_timestamp_seconds{id="..."}
//	                         queue_reservation_end_timestamp_seconds{id="..."}
//	                         queue_reservation_slots{id="..."} (1 when absent)
//	              or a gauge queue_reserved                   Reservation{Slots: n}, open-ended
//
// Reservations by interval are joined on their id; an end of 0 is
// open-ended. The plain gauge suits a system that only knows how many slots
// are reserved now, and then the horizon does not matter.
//
// Busy, reservations and the formula's terms count slots (runs at once), a
// replica has SlotsPerReplica of them (1 by default): the queue policy asks
// for ceil(slots / SlotsPerReplica) replicas, and utilization is busy over
// replicas x SlotsPerReplica (the caller's, ElasticityOptions).
//
// # Decisions the rules leave open
//
//   - The arrival rate is measured between readings (the counter's
//     increase over the time between ObservedAt's); the first evaluation has
//     no rate, and the first measured rate seeds the average instead of
//     being folded into zero. An evaluation with no elapsed time keeps the
//     older reading, as does one whose counter or rate is not finite.
//   - One alpha (ewmaAlpha) smooths both averages. The service time is
//     folded once per evaluation with weight 1-(1-alpha)^n for n new runs:
//     exactly a per-run EWMA when the interval's runs share their mean. The
//     first evaluation folds the counters' whole history, which is observed
//     runs; the default applies only while no run has been seen.
//   - Classes are named and configured highest priority first; backlog of an
//     unlisted class ranks below all listed ones, counts in the drain term
//     and has no SLO term.
//   - Like the HPA, the stabilization window starts with the current count,
//     so a restarted scaler does not scale down within its first window. The
//     cooldown runs from the last scale-down only; a scale-up is held back by
//     the window instead. "Never below busy" floors the scale-down even under
//     MaxReplicas.
//   - The rule "scale_up when target - daemon_count - in_flight > 0;
//     scale_down when daemon_count > target AND daemon_count > min" is
//     written for a controller that removes replicas itself; here the HPA
//     does and the source sees it late, so daemon_count reads as the
//     replicas seen less the removals in flight, and in_flight as the
//     launches. Both tests are on current
//     (the scale-down's counts launches too, so a launch no longer needed
//     is taken back), as are pool_with_threshold's bounds.
//   - Elasticity: Min above Max is accepted (the target formula lets Min
//     win). A scale-down needs an idle replica (Utilization < 1) or a launch
//     in flight to take back; otherwise it is downgraded to a no-op with the
//     cause appended (docs/semantics.md, "Scale-down: idle only, cost first").
//   - Pools (see pool.go): signals are summed, utilization is weighted by
//     replicas, the policy runs once with the pool's options, and the one
//     step goes to the member that needs it most.
//   - Launch tokens resolve when the visible count rises, oldest first; a
//     controller that launches replicas itself could also resolve them
//     when its launch call returns, which has no counterpart here (the HPA
//     launches). A scale-down cancels the newest
//     launch tokens first, as the ReplicaSet removes a replica that is still
//     starting before a ready one; if a cancelled launch shows up all the
//     same (it had started before the source saw it), it turns into a
//     removal. That removal lasts as long as the oldest live launch left,
//     since the new replica may as well be that launch's (the cancelled
//     one deleted unseen): either way the net count in flight stays right.
//     The rest of a scale-down records removal tokens, which resolve when
//     the visible count falls, oldest first. A scale-up takes no removal
//     back: a replica that is leaving does not return. Every token expires
//     launchTTL after its decision (a removal paired with a launch, after
//     that launch's), so launchTTL should cover the time a change takes to
//     show in the source's sample.
//   - Cost integrates the count seen at one evaluation until the next.
package policy
