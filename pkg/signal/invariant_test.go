package signal

import (
	"math"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// TestStorageNeverScalesCompute locks down the invariant under every
// profile: with compute held fixed, no storage input, however extreme,
// moves ScaleValue or RawScaleValue by a single bit.
func TestStorageNeverScalesCompute(t *testing.T) {
	for _, name := range ProfileNames() {
		opts, err := ProfileOptions(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { storageNeverScalesCompute(t, opts) })
	}
}

func storageNeverScalesCompute(t *testing.T, opts Options) {
	compute := pressure.ComputePressure{Activation: 0.6, Resource: 0.3, WalDispatch: 0.2, ReplicaCount: 3}
	classes := []pressure.AccountClassification{pressure.ClassNone, pressure.CapacityBound, pressure.ThroughputBound}
	states := []pressure.WalSaturationState{pressure.Healthy, pressure.Throttled, pressure.Saturated}
	sizes := []int64{0, 1, math.MaxInt64}

	var storages []pressure.StoragePressure
	storages = append(storages, pressure.StoragePressure{})
	for _, over := range []bool{false, true} {
		for _, size := range sizes {
			for _, class := range classes {
				for _, state := range states {
					for _, withRec := range []bool{false, true} {
						sp := pressure.StoragePressure{
							OverThreshold:    over,
							WalRetainedBytes: size,
							Accounts: []pressure.WalAccountPressure{
								{ProviderKey: "a", WalRetainedBytes: size, Saturation: state, Classification: class, OverThreshold: over},
								{ProviderKey: "b", WalRetainedBytes: 0},
							},
						}
						if withRec {
							sp.Recommendation = &pressure.WalRebalanceRecommendation{
								Tree: "t", CurrentProviderKey: "a", Classification: class, HasHeadroom: class != pressure.ThroughputBound,
							}
						}
						storages = append(storages, sp)
					}
				}
			}
		}
	}

	// Drive the same compute sequence once with empty storage, then once
	// per storage input, and compare every published value bit for bit.
	// The sequence rises, saturates and falls on stale samples, so the
	// lead, the surge and the scale-in margins all act.
	saturated, low := compute, compute
	saturated.Resource, low.Activation = 1, 0.1
	rising := func(v float64) pressure.ComputePressure { c := compute; c.Activation = v; return c }
	seq := []pressure.ComputePressure{compute, compute, compute, rising(0.7), rising(0.8), rising(0.85), rising(0.9),
		rising(0.95), saturated, saturated, low, low, low, compute}
	reference := func(storage pressure.StoragePressure) []ScalingSignal {
		c := NewComputer(opts)
		var out []ScalingSignal
		for i, cpr := range seq {
			now := at(float64(i * 5))
			out = append(out, c.Compute(now, Input{Compute: cpr, Storage: storage, MeasuredAt: now.Add(-15 * time.Second)}))
		}
		return out
	}
	want := reference(pressure.StoragePressure{})
	for i, sp := range storages {
		got := reference(sp)
		for j := range got {
			if math.Float64bits(got[j].ScaleValue) != math.Float64bits(want[j].ScaleValue) ||
				math.Float64bits(got[j].RawScaleValue) != math.Float64bits(want[j].RawScaleValue) ||
				got[j].Held != want[j].Held || got[j].Reason != want[j].Reason {
				t.Fatalf("storage input %d, sample %d: ScaleValue %v raw %v; want %v raw %v",
					i, j, got[j].ScaleValue, got[j].RawScaleValue, want[j].ScaleValue, want[j].RawScaleValue)
			}
		}
		if got[0].Storage.OverThreshold != sp.OverThreshold || got[0].Storage.WalRetainedBytes != sp.WalRetainedBytes {
			t.Fatalf("storage input %d not carried through untouched", i)
		}
	}
	if len(storages) < 100 {
		t.Fatalf("sweep too small: %d inputs", len(storages))
	}
}
