package signal

import (
	"math"
	"time"
)

// ewma is an exponentially weighted moving average over irregular samples.
// The weight of a new sample depends on the time since the last update, not
// on the number of samples, so the decay is the same at any sampling cadence.
// Not safe for concurrent use; owned by one Computer.
type ewma struct {
	halfLife time.Duration
	value    float64
	at       time.Time
	seeded   bool
}

// update folds v observed at now: alpha = 1 - 2^(-dt/halfLife). The first
// update seeds the average; dt <= 0 or halfLife <= 0 adopts the sample.
func (e *ewma) update(v float64, now time.Time) float64 {
	dt := now.Sub(e.at)
	if !e.seeded || dt <= 0 || e.halfLife <= 0 {
		e.reset(v, now)
		return v
	}
	alpha := 1 - math.Exp2(-dt.Seconds()/e.halfLife.Seconds())
	e.value += alpha * (v - e.value)
	e.at = now
	return e.value
}

// reset sets the average to v at now (a fast-attack snap, or a hold).
func (e *ewma) reset(v float64, now time.Time) {
	e.value, e.at, e.seeded = v, now, true
}
