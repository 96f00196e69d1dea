package mapsize

import "testing"

// A map that has lost most of a flood is copied to one of its own size,
// and its peak is then its size.
func TestShrunkCopiesAfterAFlood(t *testing.T) {
	m := map[int]int{}
	for i := range 1000 {
		m[i] = i
	}
	peak := 0
	m = Shrunk(m, &peak) // notes the peak
	for i := 10; i < 1000; i++ {
		delete(m, i)
	}
	out := Shrunk(m, &peak)
	out[-1] = 0
	if _, shared := m[-1]; shared || len(out) != 11 || peak != 10 {
		t.Errorf("after losing 990 of 1000: shared %v, len %d, peak %d", shared, len(out), peak)
	}
}

// One that kept most of its entries, or never held many, is kept as it
// is: a steady map is not copied at every deletion.
func TestShrunkKeepsASteadyMap(t *testing.T) {
	for _, c := range []struct{ size, peak int }{{400, 500}, {10, 60}} {
		m := map[int]int{}
		for i := range c.size {
			m[i] = i
		}
		peak := c.peak
		out := Shrunk(m, &peak)
		out[-1] = 0
		if _, same := m[-1]; !same || peak != c.peak {
			t.Errorf("%d entries of a peak of %d: copied (peak now %d)", c.size, c.peak, peak)
		}
	}
}

// A map emptied one deletion at a time, as reaping does, is copied at each
// quarter of the way down, so it ends near its size, not at the size of
// the first copy.
func TestShrunkFollowsAFallAllTheWay(t *testing.T) {
	m := map[int]int{}
	for i := range 1000 {
		m[i] = i
	}
	peak, copies := 0, 0
	for i := range 999 {
		delete(m, i)
		out := Shrunk(m, &peak)
		out[-1] = 0
		if _, same := m[-1]; !same {
			copies++
		}
		delete(out, -1)
		m = out
	}
	if peak >= minPeak || copies != 2 {
		t.Errorf("after a fall from 1000 to 1: peak %d, %d copies; want below %d after 2 (at 249 and 61)", peak, copies, minPeak)
	}
}
