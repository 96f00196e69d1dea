package exposition

import "math"

// Value is a contract value a replica may or may not have exposed (or
// pushed): OK says it did.
type Value struct {
	V  float64
	OK bool
}

// Add adds v to the value, which is then exposed.
func (s *Value) Add(v float64) { s.V, s.OK = s.V+v, true }

// Limit is the value read as a limit (a CPU or memory limit): one that is
// not a finite number above zero says nothing, and dividing by it would
// make up a pressure, so it reads as not exposed.
func (s Value) Limit() Value {
	if !s.OK || math.IsNaN(s.V) || math.IsInf(s.V, 0) || s.V <= 0 {
		return Value{}
	}
	return s
}
