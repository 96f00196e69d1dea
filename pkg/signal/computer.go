package signal

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// Input is what the computer folds at one sample.
type Input struct {
	Compute pressure.ComputePressure
	// Storage is carried onto the signal untouched; it never enters the
	// demand (storage never scales compute).
	Storage pressure.StoragePressure
	// SplitInFlight holds scale-in when the options make the gate
	// split-aware.
	SplitInFlight bool
}

// Computer folds samples into scaling signals. It keeps the smoothing and
// gate state between samples, so it is not safe for concurrent use: one
// sampler goroutine (or one test) owns it.
type Computer struct {
	opts      Options
	smooth    ewma
	gate      scaleInGate
	lastFinal float64 // the last smoothed, gated value, before the floor
	reasonBuf []byte
}

// NewComputer returns a computer with no samples yet.
func NewComputer(opts Options) *Computer {
	return &Computer{
		opts:      opts,
		smooth:    ewma{halfLife: opts.EwmaHalfLife},
		gate:      scaleInGate{window: opts.ScaleInGateWindow},
		reasonBuf: make([]byte, 0, 96),
	}
}

// WarmingUp returns the signal to publish before the first sample.
func (c *Computer) WarmingUp() ScalingSignal { return warmingUp(c.opts) }

// Compute folds one sample taken at now.
func (c *Computer) Compute(now time.Time, in Input) ScalingSignal {
	cp := in.Compute
	act := pressure.Clamp01(cp.Activation)
	res := pressure.Clamp01(cp.Resource)
	wal := pressure.Clamp01(cp.WalDispatch)
	replicas := max(1, cp.ReplicaCount)

	// A later dimension wins only when strictly greater.
	dominant, value := Activation, act
	if res > value {
		dominant, value = Resource, res
	}
	if wal > value {
		dominant, value = WalDispatch, wal
	}
	raw := value * float64(replicas)

	split := c.opts.SplitAwareScaleIn && in.SplitInFlight
	eligible := act < c.opts.ActivationScaleInThreshold &&
		res < c.opts.ResourceScaleInThreshold &&
		wal < c.opts.WalDispatchScaleInThreshold &&
		cp.WalSaturation == pressure.Healthy &&
		!split
	allowed := c.gate.observe(eligible, now)

	final, held := raw, false
	if raw >= c.lastFinal {
		c.smooth.reset(raw, now) // fast attack
	} else {
		smoothed := c.smooth.update(raw, now)
		if allowed {
			final = smoothed
		} else {
			final, held = c.lastFinal, true
			c.smooth.reset(final, now)
		}
	}
	c.lastFinal = final

	scale := max(final, c.opts.floor())
	return ScalingSignal{
		ScaleValue:          scale,
		RecommendedReplicas: max(c.opts.MinReplicas, int(math.Ceil(scale))),
		Compute:             cp,
		Storage:             in.Storage,
		Reason:              c.reason(dominant, value, replicas, held, cp.Missing),
		SampledAt:           now,
		RawScaleValue:       raw,
		Dominant:            dominant,
		Held:                held,
		ScaleInAllowed:      allowed,
		SplitInFlight:       split,
		Policy:              PolicyPressure,
	}
}

// Decide is the computer as a Decider. A sample in which no replica
// answered fails (Unanswered), so the previous signal stands. A sample whose
// source answered and saw no replica at all (scaled to zero) is valid: zero
// pressure across one replica (replicas = max(1, count)), so a workload at
// zero keeps a fresh signal instead of going stale into KEDA's fallback.
func (c *Computer) Decide(now time.Time, obs pressure.Observation, in Input) (ScalingSignal, error) {
	if err := Unanswered(obs); err != nil {
		return ScalingSignal{}, err
	}
	return c.Compute(now, in), nil
}

// Unanswered fails an observation that expected replicas (obs.Missing)
// and got no answer from any: it has nothing to fold, and reading it as
// zero would make up a value. An observation with no replica and none
// missing is nil: the source saw a workload with no replica.
func Unanswered(obs pressure.Observation) error {
	if len(obs.Replicas) > 0 || len(obs.Missing) == 0 {
		return nil
	}
	errs := make([]error, 0, len(obs.Missing)+1)
	errs = append(errs, errors.New("no replica answered"))
	for _, m := range obs.Missing {
		errs = append(errs, m.Err)
	}
	return errors.Join(errs...)
}

// reason formats "{dimension} pressure {v:0.00} across {n} replica(s)".
// Replicas that did not answer are named after it, so a partial sample is
// visible wherever the reason is read.
func (c *Computer) reason(d Dimension, v float64, replicas int, held bool, missing []string) string {
	b := append(c.reasonBuf[:0], d.String()...)
	b = append(b, " pressure "...)
	// Ties round away from zero, as the original's {v:0.00} does
	// (strconv would print 0.125 as 0.12).
	b = strconv.AppendFloat(b, math.Round(v*100)/100, 'f', 2, 64)
	b = append(b, " across "...)
	b = strconv.AppendInt(b, int64(replicas), 10)
	b = append(b, " replica(s)"...)
	if held {
		b = append(b, "; scale-in held by safety gate"...)
	}
	for i, name := range missing {
		if i == 0 {
			b = append(b, "; no answer from "...)
		} else {
			b = append(b, ", "...)
		}
		b = append(b, name...)
	}
	c.reasonBuf = b
	return string(b)
}
