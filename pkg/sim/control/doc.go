// Package control holds the controllers package sim's loop scores: the
// anchors the report compares against (Naive, which reproduces the
// metric-delay model's (docs/semantics.md, "Metric delay") number for
// number; HPA, which follows the Kubernetes HorizontalPodAutoscaler's
// algorithm; KPA, Knative's; MaxHold and its tuned baseline) and Barometer,
// which drives the real pkg/signal computer through the real pkg/pressure
// collector and reads it the way KEDA does, scored as deployed (Deployed).
// Each is a sim.Controller built on the loop's core (sim.Model, sim.State;
// the tuned baseline also runs the loop to pick its window); the Setting
// constructors name them for the report's rows.
package control
