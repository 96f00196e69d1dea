package ledger

import (
	"math"
	"testing"
)

func TestCostIntegratesReplicasOverTime(t *testing.T) {
	half, one := CostOptions{PerReplicaSecond: 0.5}, CostOptions{PerReplicaSecond: 1}
	steps := []struct {
		opts     CostOptions
		at       float64
		replicas int
		rs, cost float64
	}{
		{half, 0, 2, 0, 0},     // the first call is the baseline
		{half, 10, 3, 20, 10},  // 2 replicas held for 10 s
		{half, 20, 3, 50, 25},  // 3 for 10 s
		{one, 30, 1, 80, 55},   // a new price applies from the last call on
		{one, 25, 4, 80, 55},   // a clock that went back accrues nothing
		{one, 35, 0, 100, 75},  // 4 for the 5 s since 30 s
		{one, 45, -1, 100, 75}, // 0 for 10 s; a negative count reads 0
		{one, 55, 0, 100, 75},
	}
	var c Cost
	for i, s := range steps {
		c = c.Accrue(s.opts, s.replicas, at(s.at))
		if !near(c.ReplicaSeconds, s.rs) || !near(c.Cost, s.cost) {
			t.Errorf("step %d at %vs: %v replica-seconds, cost %v; want %v, %v", i, s.at, c.ReplicaSeconds, c.Cost, s.rs, s.cost)
		}
	}
}

func TestCostOptions(t *testing.T) {
	if err := (CostOptions{}).Validate(); err != nil {
		t.Errorf("zero price: %v", err)
	}
	for _, v := range []float64{-1, math.NaN(), math.Inf(1)} {
		wantField(t, CostOptions{PerReplicaSecond: v}.Validate(), "PerReplicaSecond")
	}
}

// An interval that would make a total non-finite is left out: the totals
// are served as JSON and Prometheus counters, and Inf would stay for good.
func TestCostIgnoresNonFiniteAccruals(t *testing.T) {
	c := Cost{}.Accrue(CostOptions{PerReplicaSecond: 1}, 2, at(0))
	c = c.Accrue(CostOptions{PerReplicaSecond: 1}, 2, at(10))
	for _, price := range []float64{math.MaxFloat64, math.NaN(), math.Inf(1)} {
		c = c.Accrue(CostOptions{PerReplicaSecond: price}, 2, at(20)) // bypasses Validate
		if c.ReplicaSeconds != 20 || c.Cost != 20 {
			t.Errorf("price %v: %v replica-seconds, cost %v; want 20, 20 (the interval left out)", price, c.ReplicaSeconds, c.Cost)
		}
	}
	if c = c.Accrue(CostOptions{PerReplicaSecond: 1}, 2, at(30)); c.ReplicaSeconds != 40 || c.Cost != 40 {
		t.Errorf("after: %v replica-seconds, cost %v; want 40, 40", c.ReplicaSeconds, c.Cost)
	}
}
