package signal

import "testing"

// 3.5 at a target of 0.7 is 5 replicas, not the 4 of
// ceil(3.5), nor the 6 that float division (5.000000000000001) would give.
func TestReplicasAtTarget(t *testing.T) {
	for _, c := range []struct {
		value, target float64
		min, want     int
	}{{3.5, 0.7, 0, 5}, {3.5, 1, 0, 4}, {0.9, 0.4, 0, 3}, {0, 0.7, 2, 2}, {0.5, 0.0001, 0, 500}, {1, 0, 0, 1}} {
		if got := ReplicasAtTarget(c.value, c.target, c.min); got != c.want {
			t.Errorf("ReplicasAtTarget(%v, %v, %d) = %d, want %d", c.value, c.target, c.min, got, c.want)
		}
	}
}
