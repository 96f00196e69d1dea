package exposition

import (
	"math"
	"math/big"
)

// exactBits is enough mantissa for any sum of float64 values to be exact:
// a float64 has bits from 2^-1074 to 2^1023, 2098 in all, and each doubling
// of the number of terms adds at most one more above; 2176 covers 2^78
// terms, far more than a counter ever folds. An exact sum is what makes the
// counters monotone by construction (see CounterSum): float addition
// rounds each step, so a sum reordered, or a term moved from one replica to
// another, can come out one ulp lower, or cancel outright.
const exactBits = 2176

// exact is a sum of float64 values with no rounding until float64 reads it;
// the zero value is 0.
type exact struct {
	f       big.Float
	scratch big.Float // the term being added, kept to reuse its mantissa
}

func (e *exact) init() {
	if e.f.Prec() == 0 {
		e.f.SetPrec(exactBits)
	}
}

// add adds a finite v exactly.
func (e *exact) add(v float64) {
	e.init()
	e.f.Add(&e.f, e.scratch.SetFloat64(v))
}

// addExact adds another exact sum.
func (e *exact) addExact(o *exact) {
	e.init()
	e.f.Add(&e.f, &o.f)
}

// float64 rounds the sum to the nearest float64, which is monotone: a
// larger exact sum never rounds to a smaller float64. Past the float64
// range it is ±Inf.
func (e *exact) float64() float64 {
	v, _ := e.f.Float64()
	return v
}

// addCounted adds v - base, exactly: what a replica counted since base.
func (e *exact) addCounted(v, base float64) {
	e.add(v)
	e.add(-base)
}

// saturate keeps a sum that overflowed float64 at the largest finite value,
// so a counter never reads +Inf (which no policy can take a rate of) and,
// at the top, still never falls.
func saturate(v float64) float64 { return min(v, math.MaxFloat64) }
