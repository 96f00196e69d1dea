package signal

import (
	"cmp"
	"math"
	"strconv"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal/seasonal"
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
	// MeasuredAt is when the data behind the sample was measured
	// (pressure.Observation.MeasuredAt); zero means at the sample's time.
	// Its age is part of the lag the compensation covers.
	MeasuredAt time.Time
	// Starting and Terminating name the replicas the source saw but did
	// not read (pressure.Observation), for the reason.
	Starting, Terminating []string
	// MeasuredStartup is how long the latest replicas took from starting
	// to ready, as a source that tells them apart saw them (measured by the
	// sampler, pkg/sampling); 0 when none was seen. The lag counts the longer of it
	// and Options.ReplicaStartup.
	MeasuredStartup time.Duration
	// Season is the history of a source that holds it
	// (pressure.SeasonSource): when set, the seasonal forecast reads it
	// instead of keeping its own; nil keeps its own.
	Season *pressure.Season
}

// Computer folds samples into scaling signals. It keeps the smoothing and
// gate state between samples, so it is not safe for concurrent use: one
// sampler goroutine (or one test) owns it.
type Computer struct {
	opts      Options
	smooth    ewma
	gate      scaleInGate
	lastFinal float64 // the last smoothed, gated value, before the floor
	trend     trend
	surge     surge
	published float64 // the last value before the floor, compensated
	sampled   bool    // a sample has landed
	last      compensated
	budget    budget
	hold      hold
	asked     asks // what the signal asked for, for the shortfall budget
	season    seasonal.Memory
	held      seasonal.Held // the forecast over a source's history (Input.Season)
	reasonBuf []byte
}

// NewComputer returns a computer with no samples yet.
func NewComputer(opts Options) *Computer {
	return &Computer{
		opts:      opts,
		smooth:    ewma{halfLife: opts.EwmaHalfLife},
		gate:      scaleInGate{window: opts.ScaleInGateWindow},
		trend:     trend{window: opts.LeadWindow, significance: cmp.Or(opts.LeadSignificance, DefaultLeadSignificance)},
		budget:    newBudget(opts.ShortfallBudget),
		hold:      hold{window: opts.ScaleInHold, price: opts.ChangeCost, target: cmp.Or(opts.SurgeTarget, 1)},
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

	startup := max(c.opts.ReplicaStartup, in.MeasuredStartup)
	lag := c.lag(now, in.MeasuredAt, startup)
	comp := c.compensate(final, raw, value, replicas, workingSetDemand(cp.WorkingSetDemand), lag, startup, in.MeasuredAt, now, in.Season)
	c.last = comp
	scale := max(comp.value, c.opts.floor())
	if c.opts.ShortfallBudget > 0 || c.opts.SaturationSurge {
		c.asked.add(now, scale)
	}
	return ScalingSignal{
		ScaleValue:          scale,
		RecommendedReplicas: max(c.opts.MinReplicas, int(math.Ceil(scale))),
		Compute:             cp,
		Storage:             in.Storage,
		Reason:              c.reason(dominant, value, replicas, held, comp, cp.Missing, in),
		SampledAt:           now,
		RawScaleValue:       raw,
		Forecast:            comp.forecast,
		// Set while the history the forecast reads is the source's and
		// none has come yet.
		ForecastHistoryPending: in.Season != nil && !c.held.HasHistory(),
		Dominant:               dominant,
		Held:                   held,
		Parts:                  comp.parts(held),
		ScaleInAllowed:         allowed,
		SplitInFlight:          split,
		Policy:                 PolicyPressure,
	}
}

// compensated is what the compensation made of one sample; the reason
// names the lead and the surge.
type compensated struct {
	value    float64 // before the floor
	lead     float64
	headroom float64 // the shortfall budget's, above raw demand
	forecast float64 // the seasonal forecast of raw demand, 0 when none
	foresaw  float64 // what the forecast added to the value
	holding  bool    // the churn budget holds a fall
	surging  bool
	measured bool // the surge's mark is the working set's, not a guess
	lag      time.Duration
}

// parts are the parts of the reason (c.reason writes them from the same
// fields).
func (comp compensated) parts(held bool) Parts {
	var p Parts
	for _, x := range []struct {
		on   bool
		part Parts
	}{{held, PartGate}, {comp.lead > 0, PartLead}, {comp.headroom > 0, PartHeadroom}, {comp.foresaw > 0, PartForecast}, {comp.holding, PartChurn}, {comp.surging, PartSurge}} {
		if x.on {
			p |= x.part
		}
	}
	return p
}

// lag is how far the sample's data trails the moment a replica asked for
// now will count: its age plus the start-up, the configured ReplicaStartup
// or the measured one, whichever is longer (the configured value may hold
// delays the measurement cannot see, and a measurement shows when the
// workload starts slower than configured). A measurement time after now (a
// skewed clock) counts as age 0.
func (c *Computer) lag(now, measuredAt time.Time, startup time.Duration) time.Duration {
	age := time.Duration(0)
	if !measuredAt.IsZero() {
		age = max(0, now.Sub(measuredAt))
	}
	return age + startup
}

// compensate applies the lead, the saturation surge and the stale-sample
// hysteresis to the gated value final, in that order: the lead and the
// surge only raise it, and the hysteresis only slows a fall. With every
// option off it returns final unchanged (the original profile).
func (c *Computer) compensate(final, raw, value float64, replicas int, working float64, lag, startup time.Duration, measuredAt, now time.Time, season *pressure.Season) compensated {
	out := compensated{value: final, lag: lag}
	stale := lag > 0
	level := cmp.Or(c.opts.SurgeLevel, DefaultSurgeLevel)
	saturated := value >= level
	if measuredAt.IsZero() {
		measuredAt = now
	}
	// The autoscaler's per-replica target (1 when it is not known).
	target := cmp.Or(c.opts.SurgeTarget, 1)
	transit := (c.opts.ShortfallBudget > 0 || c.opts.SaturationSurge) && c.asked.inTransit(measuredAt, startup, replicas, target)
	var noise float64
	if c.opts.LeadWindow > 0 {
		if !saturated {
			// A saturated sample's demand is a lower bound: a trend read
			// through it rises when the cap lifts, a rise already over.
			c.trend.add(measuredAt, raw)
		}
		noise = c.trend.noise()
		out.lead = c.trend.lead(lag)
		out.value += out.lead
	}
	if c.opts.ShortfallBudget > 0 {
		// The pool was short when the dominant pressure was above the
		// target the autoscaler divides by, unless it was a pool in
		// transition.
		if provision := c.budget.observe(measuredAt, raw, value > target, saturated, transit, lag); provision > out.value {
			out.headroom = provision - raw
			out.value = provision
		}
	}
	if mode := c.opts.Forecast; mode == ForecastOn || mode == ForecastOnly {
		if season != nil {
			out.forecast = c.held.Forecast(season, measuredAt, lag)
		} else {
			c.season.Observe(measuredAt, raw)
			out.forecast = c.season.Forecast(lag)
		}
		// The forecast is of the demand's level: with a shortfall budget
		// it is provisioned for with the budget's headroom, as the level
		// is.
		ahead := out.forecast
		if ahead > 0 && c.opts.ShortfallBudget > 0 {
			ahead += c.budget.width
		}
		if mode == ForecastOn && ahead > out.value {
			out.foresaw = ahead - out.value
			out.value = ahead
		}
	}
	// The churn budget holds what the demand asked for, not the surge: a
	// surge is a guess at demand a saturated sample hides, and ends at the
	// first sample that is not saturated, as it does without the hold.
	if held := c.hold.observe(out.value, now, startup); held > out.value {
		out.value, out.holding = held, true
	}
	if c.opts.SaturationSurge {
		// A sample of a pool in transition does not show the demand
		// below the cap (the load may be on replicas it did not read)
		// until the autoscaler has had a sync and the start-up to
		// bring what the surge asked for.
		clear := value < level*surgeClear && !(transit && now.Sub(c.surge.raised) < autoscalerSync+startup)
		if mark := c.surge.observe(now, saturated, clear, stale, replicas, target, working); mark > out.value {
			out.value, out.surging, out.measured = mark, true, c.surge.measured
		}
	}
	if stale && c.sampled && out.value < c.published {
		margin := max(float64(out.value*c.opts.ScaleInHysteresis), float64(c.opts.ScaleInNoiseMargin*noise))
		out.value = min(c.published, out.value+margin)
	}
	c.published, c.sampled = out.value, true
	return out
}

// reason formats "{dimension} pressure {v:0.00} across {n} replica(s)".
// The compensation's lead ("; lead +0.30", in replicas of demand) and
// surge ("; saturation surge", "from the working set" when the working
// set rather than the growth estimate set it) follow, then the replicas that did not
// answer, so a partial sample is visible wherever the reason is read.
func (c *Computer) reason(d Dimension, v float64, replicas int, held bool, comp compensated, missing []string, in Input) string {
	b := append(c.reasonBuf[:0], d.String()...)
	b = append(b, " pressure "...)
	// Ties round away from zero (docs/semantics.md, "Reason strings"):
	// strconv would print 0.125 as 0.12.
	b = strconv.AppendFloat(b, math.Round(v*100)/100, 'f', 2, 64)
	b = append(b, " across "...)
	b = strconv.AppendInt(b, int64(replicas), 10)
	b = append(b, " replica(s)"...)
	if held {
		b = append(b, "; scale-in held by safety gate"...)
	}
	if comp.lead > 0 {
		b = append(b, "; lead +"...)
		b = strconv.AppendFloat(b, math.Round(comp.lead*100)/100, 'f', 2, 64)
	}
	if comp.headroom > 0 {
		b = append(b, "; headroom +"...)
		b = strconv.AppendFloat(b, math.Round(comp.headroom*100)/100, 'f', 2, 64)
	}
	if comp.foresaw > 0 {
		b = append(b, "; forecast +"...)
		b = strconv.AppendFloat(b, math.Round(comp.foresaw*100)/100, 'f', 2, 64)
	}
	if comp.holding {
		b = append(b, "; scale-in held by churn budget"...)
	}
	if comp.surging {
		b = append(b, "; saturation surge"...)
		if comp.measured {
			b = append(b, " from the working set"...)
		}
	}
	b = appendNames(b, "; no answer from ", missing)
	b = appendNames(b, "; starting: ", in.Starting)
	b = appendNames(b, "; terminating, left out: ", in.Terminating)
	c.reasonBuf = b
	return string(b)
}

// appendNames appends prefix and the names, comma-separated, when there are
// any.
func appendNames(b []byte, prefix string, names []string) []byte {
	for i, name := range names {
		if i == 0 {
			b = append(b, prefix...)
		} else {
			b = append(b, ", "...)
		}
		b = append(b, name...)
	}
	return b
}
