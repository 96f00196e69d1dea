package sim

import (
	"math"
	"time"
)

// Model holds the capacity-planning inputs every controller shares.
type Model struct {
	// Saturation is one replica's saturation throughput (requests/s).
	Saturation float64
	// Target is the target occupancy per replica, in (0, 1].
	Target float64
	// MinReplicas and MaxReplicas bound every decision.
	MinReplicas, MaxReplicas int
	// InitialReplicas is the replica count before turn 0.
	InitialReplicas int
}

// ReferenceModel is the metric-delay model (docs/semantics.md, "The model
// and the reference series"): 1176.47 requests/s per replica, 70 % target
// occupancy, 1..12 replicas, starting at 2.
func ReferenceModel() Model {
	return Model{Saturation: 1176.47, Target: 0.70, MinReplicas: 1, MaxReplicas: 12, InitialReplicas: 2}
}

// Required is the replica count a load needs at the target occupancy:
// max(MinReplicas, ceil(load / (Saturation x Target))).
func (m Model) Required(load float64) int {
	return max(m.MinReplicas, m.Items(load))
}

// Items is load in replica-sized items: ceil(load / (Saturation x Target)),
// the required-replica rule without its floor.
func (m Model) Items(load float64) int {
	return int(math.Ceil(load / (m.Saturation * m.Target)))
}

// Ideal is the replica-turns a series needs: the sum of Required.
func (m Model) Ideal(load []float64) int {
	total := 0
	for _, l := range load {
		total += m.Required(l)
	}
	return total
}

// Clamp bounds a replica count to [MinReplicas, MaxReplicas].
func (m Model) Clamp(n int) int {
	return min(m.MaxReplicas, max(m.MinReplicas, n))
}

// DefaultTurn is the length of one turn when a controller needs wall-clock
// time: the HPA's sync period.
const DefaultTurn = 15 * time.Second
