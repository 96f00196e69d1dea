package sim

import "math"

// Compensation is the simulator's optional answer to the lag that remains
// once demand is measured across the right replica count. Each part has a
// name and is off in its zero value; Barometer applies them between the
// signal and KEDA's read, so the signal itself is untouched.
type Compensation struct {
	// TrendWindow > 1 turns on the lead: the least-squares slope of the
	// last TrendWindow raw demands (RawScaleValue), times the sample's age
	// in turns, is added to ScaleValue. Its scale-in safety: a falling
	// trend never removes a replica ahead of the measurement (a negative
	// lead counts as 0).
	TrendWindow int
	// ScaleInHysteresis > 0 is a margin on scale-in: with a stale sample,
	// the count only falls as far as ceil(demand x (1 + h) / target).
	ScaleInHysteresis float64
	// SaturationSurge answers a saturated sample, whose capped pressure
	// hides how far demand exceeds the n replicas it was measured across,
	// with at least 2n replicas (the HPA's default 100 % scale-up policy)
	// and, when the sample is stale, at least n + 4 (its 4-pods policy).
	SaturationSurge bool
}

// saturationSurgePods is the HPA default scale-up policy's pod count.
const saturationSurgePods = 4

// compensator holds the raw-demand history the lead needs.
type compensator struct {
	c   Compensation
	raw []float64
}

// demand adds the lead to scaleValue; raw is this sample's raw demand and
// age its age in turns.
func (p *compensator) demand(scaleValue, raw float64, age int) float64 {
	if p.c.TrendWindow < 2 {
		return scaleValue
	}
	p.raw = append(p.raw, raw)
	if len(p.raw) > p.c.TrendWindow {
		p.raw = p.raw[1:]
	}
	return scaleValue + max(0, float64(slope(p.raw)*float64(age)))
}

// replicas turns the compensated demand into a replica count at target.
// current is the provisioned count; saturated reports a capped sample
// measured across measured replicas.
func (p *compensator) replicas(demand, target float64, current, measured, age int, saturated bool) int {
	want := int(math.Ceil(demand / target))
	if want < current && age > 0 && p.c.ScaleInHysteresis > 0 {
		want = min(current, int(math.Ceil(demand*(1+p.c.ScaleInHysteresis)/target)))
	}
	if saturated && p.c.SaturationSurge {
		want = max(want, 2*measured)
		if age > 0 {
			want = max(want, measured+saturationSurgePods)
		}
	}
	return want
}

// slope is the least-squares slope of ys against 0, 1, 2, ...
func slope(ys []float64) float64 {
	n := float64(len(ys))
	if n < 2 {
		return 0
	}
	// The float64 conversions forbid fused multiply-adds, so every
	// platform computes the same slope.
	var sx, sy, sxx, sxy float64
	for i, y := range ys {
		x := float64(i)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+float64(x*x), sxy+float64(x*y)
	}
	return (float64(n*sxy) - float64(sx*sy)) / (float64(n*sxx) - float64(sx*sx))
}
