package pressure

import (
	"math"
	"sort"
)

// ReplicaPressure is one replica's normalised compute pressure, kept so a
// reason can name the hottest replica.
type ReplicaPressure struct {
	Name          string             `json:"name"`
	Activation    float64            `json:"activation"`
	Resource      float64            `json:"resource"`
	WalDispatch   float64            `json:"walDispatch"`
	WalSaturation WalSaturationState `json:"walSaturation"`
}

// Worst is the replica's highest dimension.
func (r ReplicaPressure) Worst() float64 {
	return max(r.Activation, r.Resource, r.WalDispatch)
}

// ComputePressure is the cluster-aggregate compute axis: each dimension is
// the worst replica's, in [0, 1].
type ComputePressure struct {
	Activation    float64            `json:"activation"`
	Resource      float64            `json:"resource"`
	WalDispatch   float64            `json:"walDispatch"`
	WalSaturation WalSaturationState `json:"walSaturation"`
	// ReplicaCount is the number of replicas the pressure was measured across.
	ReplicaCount int `json:"replicaCount"`
	// Replicas is the per-replica detail, sorted by name.
	Replicas []ReplicaPressure `json:"replicas,omitempty"`
	// Missing names the replicas that did not answer this sample.
	Missing []string `json:"missing,omitempty"`
	// WorkingSetDemand is the demand the working set measures, uncapped:
	// the replicas' summed working set over the activation target, in
	// replicas at full activation pressure. Unlike the dimensions it is
	// not clamped, so while the pool is saturated it still says how far
	// above the pool the demand is (docs/exposition.md). nil when no
	// replica reported a working set or the activation dimension is off:
	// absent, which is not 0 (idle). It is the sum, not the hottest
	// replica's ratio times the pool: the total is the work the pool must
	// place, and one replica's excess (a hot key, a stuck connection) is
	// not every replica's.
	WorkingSetDemand *float64 `json:"workingSetDemand,omitempty"`
}

// Hottest returns the replica with the highest single dimension (ties go to
// the first by name) and false when there is no per-replica detail.
func (c ComputePressure) Hottest() (ReplicaPressure, bool) {
	if len(c.Replicas) == 0 {
		return ReplicaPressure{}, false
	}
	hot := c.Replicas[0]
	for _, r := range c.Replicas[1:] {
		if r.Worst() > hot.Worst() {
			hot = r
		}
	}
	return hot, true
}

// DefaultActivationWorkingSetTarget is the working set per replica that
// reads as full activation pressure.
const DefaultActivationWorkingSetTarget = 100000

// ComputeCollector folds per-replica observations into the cluster's
// ComputePressure. It is stateless and safe for concurrent use.
type ComputeCollector struct {
	// ActivationWorkingSetTarget is the working set per replica that reads
	// 1.0; <= 0 turns the activation dimension off (it reads 0).
	ActivationWorkingSetTarget float64
}

// Collect folds an observation: the worst replica per dimension, the worst
// WAL state, and the number of replicas that answered.
func (c ComputeCollector) Collect(obs Observation) ComputePressure {
	out := ComputePressure{
		ReplicaCount: len(obs.Replicas),
		Replicas:     make([]ReplicaPressure, 0, len(obs.Replicas)),
	}
	var working float64
	reported := false
	for _, r := range obs.Replicas {
		p := c.replica(r)
		if r.HasWorkingSet && c.ActivationWorkingSetTarget > 0 {
			working += count(r.WorkingSet) / c.ActivationWorkingSetTarget
			reported = true
		}
		out.Activation = max(out.Activation, p.Activation)
		out.Resource = max(out.Resource, p.Resource)
		out.WalDispatch = max(out.WalDispatch, p.WalDispatch)
		out.WalSaturation = Worse(out.WalSaturation, p.WalSaturation)
		out.Replicas = append(out.Replicas, p)
	}
	if reported {
		out.WorkingSetDemand = &working
	}
	sort.Slice(out.Replicas, func(i, j int) bool { return out.Replicas[i].Name < out.Replicas[j].Name })
	for _, m := range obs.Missing {
		out.Missing = append(out.Missing, m.Name)
	}
	sort.Strings(out.Missing)
	return out
}

func (c ComputeCollector) replica(r ReplicaObservation) ReplicaPressure {
	p := ReplicaPressure{
		Name:          r.Name,
		WalSaturation: r.WalSaturation,
		WalDispatch:   r.WalSaturation.DispatchPressure(),
		Resource:      Clamp01(r.CPUUtilisation),
	}
	if c.ActivationWorkingSetTarget > 0 {
		p.Activation = Clamp01(r.WorkingSet / c.ActivationWorkingSetTarget)
	}
	if r.MemoryLimitBytes > 0 {
		p.Resource = max(p.Resource, Clamp01(r.MemoryUsedBytes/r.MemoryLimitBytes))
	}
	return p
}

// count reads a working set as a count: NaN, infinities and negatives are
// 0 (a broken exporter's value adds nothing, and every surface can print
// the sum).
func count(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}

// Demand is the raw replica demand the pressure asks for: the highest
// dimension times the replicas it was measured across (at least one), as
// the signal computes it.
func (c ComputePressure) Demand() float64 {
	return max(Clamp01(c.Activation), Clamp01(c.Resource), Clamp01(c.WalDispatch)) * float64(max(1, c.ReplicaCount))
}
