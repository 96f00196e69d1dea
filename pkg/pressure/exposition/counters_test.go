package exposition

import (
	"math"
	"testing"
	"time"
)

// TestCounterSumNeverFallsSpuriously walks one counter through every event
// that makes a plain sum fall.
func TestCounterSumNeverFallsSpuriously(t *testing.T) {
	var c CounterSum
	at := t0
	step := func(want float64, readings map[string]float64) {
		t.Helper()
		for r, v := range readings {
			c.Observe(r, v, at)
		}
		got, ok := c.Settle(at, CounterTTL)
		if !ok || got != want {
			t.Fatalf("at +%v: sum %v (ok %v), want %v", at.Sub(t0), got, ok, want)
		}
		at = at.Add(time.Minute)
	}
	if _, ok := c.Settle(at, CounterTTL); ok {
		t.Fatal("a counter never read has a sum")
	}
	step(150, map[string]float64{"a": 100, "b": 50})           // first sample: whole history
	step(170, map[string]float64{"a": 110, "b": 60})           // plain sum
	step(175, map[string]float64{"a": 115})                    // b missing: held at 60
	step(185, map[string]float64{"a": 120, "b": 65})           // b back, with what it counted meanwhile
	step(192, map[string]float64{"a": 125, "b": 2})            // b restarted: its 65 stay, 2 are new
	step(197, map[string]float64{"a": 130, "b": 2, "c": 9000}) // c, first seen late, counts from here
	step(198, map[string]float64{"a": 130, "b": 2, "c": 9001})
	step(198, map[string]float64{"a": math.NaN(), "b": -1, "c": 9001}) // unusable readings: held
	at = at.Add(CounterTTL)
	step(200, map[string]float64{"a": 132})         // b and c forgotten, their counts kept
	step(200, map[string]float64{"a": 132, "b": 2}) // b is a newcomer again
	step(202, map[string]float64{"a": 132, "b": 4})
}
