package exposition

import (
	"math"
	"testing"
)

// TestValueLimit: a limit that is not a finite number above zero reads as
// not exposed, whichever source read it.
func TestValueLimit(t *testing.T) {
	for _, v := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := (Value{V: v, OK: true}).Limit(); got.OK {
			t.Errorf("limit %v kept: %+v", v, got)
		}
	}
	if got := (Value{V: 2, OK: true}).Limit(); !got.OK || got.V != 2 {
		t.Errorf("limit 2: %+v", got)
	}
	var s Value
	s.Add(1)
	s.Add(0.5)
	if !s.OK || s.V != 1.5 {
		t.Errorf("sum: %+v", s)
	}
}
