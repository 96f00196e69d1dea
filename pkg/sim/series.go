package sim

import (
	"fmt"
	"math"
)

// Series is a load trace, one value per turn, with the event window the
// jump scores look at.
type Series struct {
	Name string
	// Load is the offered load per turn (requests/s).
	Load []float64
	// EventStart and EventEnd bound the event (jump) window [start, end):
	// shortfall inside it is counted separately and the reaction is
	// measured from EventStart. EventEnd <= EventStart means no event.
	EventStart, EventEnd int
	// Queue is the queue trace the series was made from (QueueTrace.Series);
	// nil for a load series, whose excess load is shed each turn.
	Queue *QueueTrace
}

// HasEvent reports whether the series has an event window.
func (s Series) HasEvent() bool { return s.EventEnd > s.EventStart }

// ReferenceSeed is the reference series' generator seed (docs/semantics.md,
// "The model and the reference series").
const ReferenceSeed = 20260805

// lcg is the model's Park-Miller generator (multiplier 48271, modulus
// 2^31 - 1); every step is exact in int64, as it is in the model's float64
// arithmetic (each product stays below 2^53).
type lcg struct{ s int64 }

func newLCG(seed int64) *lcg { return &lcg{s: seed % 2147483647} }

func (g *lcg) next() float64 {
	g.s = g.s * 48271 % 2147483647
	return float64(g.s) / 2147483647
}

// jsRound is JavaScript's Math.round: halves round towards +Infinity.
func jsRound(x float64) float64 {
	f := math.Floor(x)
	if x-f >= 0.5 {
		return f + 1
	}
	return f
}

// Wave describes the reference series' family: a sine wave plus a
// rectangular step, multiplied by uniform noise, rounded and floored.
type Wave struct {
	Seed      int64
	Turns     int
	Base      float64 // mean of the wave
	Amplitude float64
	Period    float64 // turns per wave
	// Step is added to the wave in [StepStart, StepEnd).
	Step               float64
	StepStart, StepEnd int
	// Noise is the half-width of the multiplicative band: load x U[1-Noise, 1+Noise).
	Noise float64
	// Floor is the smallest load.
	Floor float64
}

// ReferenceWave is the reference series' shape: 120 turns, a 40-turn wave
// of 1200 +/- 900, a 1800 step in turns 60..89, +/-8 % noise, floor 200.
func ReferenceWave(seed int64) Wave {
	return Wave{Seed: seed, Turns: 120, Base: 1200, Amplitude: 900, Period: 40,
		Step: 1800, StepStart: 60, StepEnd: 90, Noise: 0.08, Floor: 200}
}

// Series generates the wave. The arithmetic follows the model's generator
// operation for operation; the explicit float64 conversions forbid fused multiply-adds.
func (w Wave) Series(name string) Series {
	g := newLCG(w.Seed)
	lo, width := 1-w.Noise, 2*w.Noise
	load := make([]float64, w.Turns)
	for t := range load {
		wave := w.Base + float64(w.Amplitude*math.Sin(float64(2*math.Pi*float64(t))/w.Period))
		step := 0.0
		if t >= w.StepStart && t < w.StepEnd {
			step = w.Step
		}
		noise := lo + float64(width*g.next())
		load[t] = max(w.Floor, jsRound(float64((wave+step)*noise)))
	}
	return Series{Name: name, Load: load, EventStart: w.StepStart, EventEnd: w.StepEnd}
}

// Reference is the model's 120-turn series, named as the model's tables
// print it ("seed 20260805").
func Reference() Series { return Seeded(ReferenceSeed) }

// JumpTest is the model's noise-free jump: 60 turns at 800 requests/s,
// then 60 at 3200; the event window is the model's turns 60..89
// (docs/semantics.md, "The tables and the jump test").
func JumpTest() Series {
	load := make([]float64, 120)
	for t := range load {
		load[t] = 800
		if t >= 60 {
			load[t] = 3200
		}
	}
	return Series{Name: "jump test", Load: load, EventStart: 60, EventEnd: 90}
}

// Seeded is the reference series' shape with another seed.
func Seeded(seed int64) Series {
	return ReferenceWave(seed).Series(fmt.Sprintf("seed %d", seed))
}

// FlashCrowd is a quiet, noisy base of 600 requests/s hit at turn 50 by a
// crowd of 3000 more that decays with a 12-turn time constant.
func FlashCrowd(seed int64) Series {
	g := newLCG(seed)
	load := make([]float64, 120)
	for t := range load {
		crowd := 0.0
		if t >= 50 {
			crowd = float64(3000 * math.Exp(-float64(t-50)/12))
		}
		load[t] = math.Round((600 + crowd) * (0.92 + float64(0.16*g.next())))
	}
	return Series{Name: "flash crowd", Load: load, EventStart: 50, EventEnd: 80}
}

// SlowRamp climbs linearly from 300 to 3900 requests/s over 100 turns and
// holds for 20, with +/-8 % noise; it has no event window.
func SlowRamp(seed int64) Series {
	g := newLCG(seed)
	load := make([]float64, 120)
	for t := range load {
		level := 300 + float64(36*float64(min(t, 100)))
		load[t] = math.Round(level * (0.92 + float64(0.16*g.next())))
	}
	return Series{Name: "slow ramp", Load: load}
}
