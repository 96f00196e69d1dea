// Package sim is Barometer's decision-quality simulator: a deterministic,
// turn-based closed loop that measures how a scaling controller behaves when
// its metric arrives late.
//
// One turn is one measurement interval. Each turn the loop measures the
// per-replica occupancy (load / (ready replicas x saturation)) and the work
// queue (QueueSample), pushes the sample into a metric pipeline that
// delivers it Delay turns later, asks a Controller for the replica count,
// and scores that count against the replicas the turn's load required.
//
// The series generator and the required-replica rule reproduce the
// metric-delay model (docs/semantics.md, "Metric delay") number for number.
// A QueueTrace (arrivals and service times) is the same loop with work that
// waits. The controllers the loop is scored with live beside it:
// pkg/sim/control holds the anchors (Naive, HPA, KPA, the max-hold baseline)
// and Barometer's own; pkg/sim/policies drives pkg/policy's replica
// policies in the loop; pkg/sim/report writes the decision-quality report;
// pkg/sim/command is `scaler simulate`.
package sim
