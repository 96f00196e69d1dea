package pressure

import (
	"errors"
	"math"
	"testing"
)

func TestComputeCollector(t *testing.T) {
	c := ComputeCollector{ActivationWorkingSetTarget: 1000}
	obs := Observation{
		Replicas: []ReplicaObservation{
			{Name: "b", WorkingSet: 500, CPUUtilisation: 0.2, MemoryUsedBytes: 900, MemoryLimitBytes: 1000, WalSaturation: Throttled},
			{Name: "a", WorkingSet: 2500, CPUUtilisation: 0.4},                                      // no ceiling: CPU only
			{Name: "c", WorkingSet: math.NaN(), CPUUtilisation: -1, MemoryUsedBytes: 5e9},           // no ceiling, memory ignored
			{Name: "d", CPUUtilisation: math.Inf(1), MemoryLimitBytes: 100, WalSaturation: Healthy}, // +Inf clamps
		},
		Missing: []MissingReplica{{Name: "z", Err: errors.New("timeout")}, {Name: "y"}},
	}
	got := c.Collect(obs)
	if got.Activation != 1 || got.Resource != 1 || got.WalDispatch != 0.5 || got.WalSaturation != Throttled || got.ReplicaCount != 4 {
		t.Fatalf("cluster pressure %+v", got)
	}
	want := []ReplicaPressure{
		{Name: "a", Activation: 1, Resource: 0.4},
		{Name: "b", Activation: 0.5, Resource: 0.9, WalDispatch: 0.5, WalSaturation: Throttled},
		{Name: "c"},
		{Name: "d", Resource: 1},
	}
	for i, w := range want {
		if got.Replicas[i] != w {
			t.Errorf("replica %d = %+v, want %+v", i, got.Replicas[i], w)
		}
	}
	if len(got.Missing) != 2 || got.Missing[0] != "y" || got.Missing[1] != "z" {
		t.Errorf("missing = %v", got.Missing)
	}
	if hot, ok := got.Hottest(); !ok || hot.Name != "a" {
		t.Errorf("hottest = %+v", hot)
	}
}

func TestComputeCollectorActivationOff(t *testing.T) {
	got := ComputeCollector{}.Collect(Observation{Replicas: []ReplicaObservation{{Name: "a", WorkingSet: 1e9}}})
	if got.Activation != 0 {
		t.Fatalf("activation with target 0 = %v, want 0", got.Activation)
	}
	if _, ok := (ComputePressure{}).Hottest(); ok {
		t.Fatal("Hottest on no replicas reported one")
	}
}

// TestComputeCollectorWorkingSetDemand: the working set is summed over the
// target, uncapped, beside dimensions that stay clamped; a replica with no
// working set series adds nothing; a sample where none has one (or the
// activation dimension is off) leaves it absent, and one where every
// replica reports 0 says 0, idle.
func TestComputeCollectorWorkingSetDemand(t *testing.T) {
	c := ComputeCollector{ActivationWorkingSetTarget: 100}
	got := c.Collect(Observation{Replicas: []ReplicaObservation{
		{Name: "a", WorkingSet: 500, HasWorkingSet: true, CPUUtilisation: 1},  // 5 times its share, capped at 1
		{Name: "b", WorkingSet: 250, HasWorkingSet: true},                     // 2.5
		{Name: "c", WorkingSet: 9999},                                         // no series: nothing
		{Name: "d", WorkingSet: math.Inf(1), HasWorkingSet: true},             // broken: nothing
		{Name: "e", WorkingSet: -3, HasWorkingSet: true, CPUUtilisation: 0.2}, // negative: nothing
	}})
	if got.Activation != 1 || got.Resource != 1 || got.Demand() != 5 {
		t.Fatalf("the clamped dimensions moved: %+v, demand %v", got, got.Demand())
	}
	if got.WorkingSetDemand == nil || *got.WorkingSetDemand != 7.5 {
		t.Fatalf("working set demand %v, want 7.5 (500/100 + 250/100)", got.WorkingSetDemand)
	}
	for _, tt := range []struct {
		name string
		c    ComputeCollector
		obs  []ReplicaObservation
		want *float64
	}{
		{"no replica reports one", c, []ReplicaObservation{{Name: "a", CPUUtilisation: 1}}, nil},
		{"activation off", ComputeCollector{}, []ReplicaObservation{{Name: "a", WorkingSet: 500, HasWorkingSet: true}}, nil},
		{"no replicas", c, nil, nil},
		{"idle", c, []ReplicaObservation{{Name: "a", HasWorkingSet: true}}, new(float64)},
	} {
		got := tt.c.Collect(Observation{Replicas: tt.obs}).WorkingSetDemand
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("%s: working set demand %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWalStateFromGauge(t *testing.T) {
	tests := []struct {
		v       float64
		want    WalSaturationState
		wantErr bool
	}{
		{0, Healthy, false}, {1, Throttled, false}, {2, Saturated, false}, {0.3, Throttled, false},
		{1.5, Saturated, false}, {-1, Healthy, true}, {3, Healthy, true}, {math.NaN(), Healthy, true},
	}
	for _, tt := range tests {
		got, err := WalStateFromGauge(tt.v)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("WalStateFromGauge(%v) = %v, %v; want %v, err %v", tt.v, got, err, tt.want, tt.wantErr)
		}
	}
	var s WalSaturationState
	if err := s.UnmarshalText([]byte("Saturated")); err != nil || s != Saturated {
		t.Errorf("UnmarshalText: %v %v", s, err)
	}
	if err := s.UnmarshalText([]byte("hot")); err == nil {
		t.Error("UnmarshalText accepted an unknown state")
	}
	if Saturated.DispatchPressure() != 1 || Throttled.DispatchPressure() != 0.5 || Healthy.DispatchPressure() != 0 {
		t.Error("dispatch pressure mapping")
	}
}
