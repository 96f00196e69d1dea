package exposition

import (
	"fmt"
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

// TestCounterSumDoesNotCancel holds the falls a float offset produced
// once: a late newcomer's first reading was subtracted from
// an offset and added back with the replica, and the rounding in between
// could lose everything else. The first case is FuzzQueueFold's seed
// e0bd146fe03ec8a5: a replica forgotten after the TTL, then a newcomer of
// 6.4e116, read as a fall from 4.8 to 0.
func TestCounterSumDoesNotCancel(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []map[string]float64
		gap   time.Duration
		want  []float64
	}{
		{"forgotten, then a huge newcomer", []map[string]float64{{"c": 4.8}, {"b": 6.378489473675153e+116}}, 48 * time.Minute, []float64{4.8, 4.8}},
		{"a huge newcomer", []map[string]float64{{"a": 5}, {"a": 5, "c": 1e300}, {"a": 6, "c": 1e300}}, time.Minute, []float64{5, 5, 6}},
		{"a huge restart", []map[string]float64{{"a": 5, "c": 1e300}, {"a": 6, "c": 1}}, time.Minute, []float64{1e300, 1e300}},
		{"past float64", []map[string]float64{{"a": math.MaxFloat64, "b": math.MaxFloat64}, {"a": 1}}, time.Minute, []float64{math.MaxFloat64, math.MaxFloat64}},
		{"tenths in any order", []map[string]float64{{"a": 0.1, "b": 0.2, "c": 0.3}, {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.7}}, time.Minute, []float64{0.6, 0.6}},
	} {
		var s CounterSum
		at := t0
		for i, readings := range c.steps {
			for r, v := range readings {
				s.Observe(r, v, at)
			}
			got, _ := s.Settle(at, CounterTTL)
			if got != c.want[i] {
				t.Errorf("%s, sample %d: sum %v, want %v", c.name, i, got, c.want[i])
			}
			at = at.Add(c.gap)
		}
	}
}

// BenchmarkQueueCounters1000Replicas is one sample's counter fold for 1,000
// replicas, the scrape benchmark's fleet: the cost of summing exactly.
func BenchmarkQueueCounters1000Replicas(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("10.0.%d.%d:8080", i/256, i%256)
	}
	var c QueueCounters
	at := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var f QueueFold
		for j, name := range names {
			f.Arrivals(name, float64(i*j)+0.25)
			f.RunSeconds(name, float64(i)*1.1)
			f.Runs(name, float64(i))
		}
		f.Observation(&c, at)
		at = at.Add(time.Second)
	}
}
