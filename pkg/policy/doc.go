// Package policy holds Barometer's replica policies beside the pressure
// signal, as pure decisions: the queue-pressure policy (queue.go) and the
// elasticity policies (elasticity.go, pool.go). Each declares its Kind
// (kind.go): its name, its keys and how its options become a Spec that
// decides; Kinds lists them, and pkg/trigger, pkg/decide and the simulator
// iterate over that list. docs/semantics.md states every rule.
//
// A decision is a function of (state, observation, now), like the HPA's
// replica_calculator.go: the policies hold only validated options and are
// safe for concurrent use; a Decider keeps one target's state. Nothing
// reads a clock. The bookkeeping around a decision (launch tracking, cost,
// the audit event) is pkg/policy/ledger's.
//
// Every decision says the replica count to publish (Decision.Desired). The
// KEDA side returns it with target 1 (AverageValue), so the HPA asks for
// exactly that count. "Current" is always max(visible + inFlight, 0): the
// replicas seen plus the launches, less the removals, not yet seen.
//
// The queue policy reads raw counters and gauges, never rates
// (docs/exposition.md names the metrics); Busy, reservations and the
// formula's terms count slots, SlotsPerReplica to a replica.
package policy
