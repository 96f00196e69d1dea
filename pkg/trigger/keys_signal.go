package trigger

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// signalKeys are the pressure signal's keys: its floor and the options of
// pkg/signal's computer, each defaulting to the profile's.
func signalKeys() []keyschema.Key[Trigger] {
	return []keyschema.Key[Trigger]{
		keyschema.Int("minReplicas", func(t *Trigger) *int { return &t.Signal.MinReplicas }, 0, 0, policy.MaxReplicaBound).For(onlyPressure...).
			Describe("lower bound of the decided count (a pool's total); `pressure`: the replica floor, once the first sample lands"),
		keyschema.Enum("floor", func(t *Trigger) *string { return &t.Floor }, FloorTarget, FloorTarget, FloorReplicas).For(onlyPressure...).
			Describe("`target`: floor `scaleValue` at `minReplicas x targetPressure`, so the HPA rests at exactly `minReplicas`; `replicas`: floor at `minReplicas` itself (the HPA then rests at `minReplicas / targetPressure`)"),
		signalDuration("ewmaHalfLife", func(o *signal.Options) *time.Duration { return &o.EwmaHalfLife }).
			Describe("half-life of the slow release; `0s` turns smoothing off"),
		signalDuration("scaleInGateWindow", func(o *signal.Options) *time.Duration { return &o.ScaleInGateWindow }).
			Describe("how long scale-in preconditions must hold"),
		signalFloat("activationScaleInThreshold", func(o *signal.Options) *float64 { return &o.ActivationScaleInThreshold }, keyschema.Between(0, 1)).
			Describe("activation at or above this blocks scale-in"),
		signalFloat("resourceScaleInThreshold", func(o *signal.Options) *float64 { return &o.ResourceScaleInThreshold }, keyschema.Between(0, 1)).
			Describe("resource at or above this blocks scale-in"),
		signalFloat("walDispatchScaleInThreshold", func(o *signal.Options) *float64 { return &o.WalDispatchScaleInThreshold }, keyschema.Between(0, 1)).
			Describe("WAL dispatch at or above this blocks scale-in"),
		keyschema.Bool("splitAwareScaleIn", func(t *Trigger) *bool { return &t.Signal.SplitAwareScaleIn }, true).For(onlyPressure...).
			Describe("hold scale-in while a split is in flight"),
		keyschema.Duration("replicaStartup", func(t *Trigger) *time.Duration { return &t.Signal.ReplicaStartup }, 0, 0, signal.MaxReplicaStartup, false).For(onlyPressure...).InSimulator().
			Describe("how long a new replica takes to count (start-up, readiness, any delay the source does not report); added to the sample's age, it is the lag the lead covers; a `k8s://` target's measured start-up counts when longer (docs/compensation.md)"),
		signalInt("leadWindow", func(o *signal.Options) *int { return &o.LeadWindow }, signal.MaxLeadWindow).
			Describe("samples of raw demand the lead reads its trend and noise from, 0 (no lead, no noise margin) or 3 and more"),
		signalFloat("leadSignificance", func(o *signal.Options) *float64 { return &o.LeadSignificance }, keyschema.Between(0, 10)).
			Describe("how significant a rise must be (its Mann-Kendall z) before it leads; 0 reads as 2"),
		signalFloat("scaleInHysteresis", func(o *signal.Options) *float64 { return &o.ScaleInHysteresis }, keyschema.Between(0, 1)).
			Describe("on a stale sample, a fall stops at demand x (1 + this)"),
		signalFloat("scaleInNoiseMargin", func(o *signal.Options) *float64 { return &o.ScaleInNoiseMargin }, keyschema.Between(0, 10)).
			Describe("on a stale sample, a fall stops at demand + this many widths of the measured noise (needs `leadWindow`)"),
		signalBool("saturationSurge", func(o *signal.Options) *bool { return &o.SaturationSurge }).
			Describe("a saturated sample across n replicas asks for 2n (n + 4 when stale), a later one across a larger pool for that pool times the growth seen, and at least what the replicas' working set measures (uncapped) where they report one; held while the samples stay saturated, ended by the first clearly below saturation (under 90 % of `surgeLevel`)"),
		signalFloat("surgeLevel", func(o *signal.Options) *float64 { return &o.SurgeLevel }, keyschema.Between(0, 1)).
			Describe("dominant pressure at or above which a sample counts as saturated; 0 reads as 1"),
		signalFloat("shortfallBudget", func(o *signal.Options) *float64 { return &o.ShortfallBudget }, keyschema.Between(0, 0.5)).
			Describe("the share of samples that may see the pool short: the signal provisions for the recent level plus a headroom fed back from the samples, so that about this share see the dominant pressure above `targetPressure`; `0` turns it off (docs/compensation.md)"),
		signalDuration("scaleInHold", func(o *signal.Options) *time.Duration { return &o.ScaleInHold }).
			Describe("the churn budget's longest hold: a fall is published once the lower level has lasted this long, or sooner when `changeCost` prices it; a rise is never delayed; `0s` turns the churn budget off"),
		signalFloat("changeCost", func(o *signal.Options) *float64 { return &o.ChangeCost }, keyschema.Between(0, signal.MaxChangeCost)).
			Describe("the price of a change, in replica-seconds, that the churn budget weighs a scale-in against (rent-or-buy): a surplus of S replicas is kept `changeCost / S` beyond a replica's start-up (`replicaStartup`, or the measured one), twice that where the latest drops were undone and half where they lasted, at most `scaleInHold`; `0`: every fall waits the whole `scaleInHold` (docs/compensation.md)"),
		profiled(keyschema.Enum("forecast", func(t *Trigger) *string { return (*string)(&t.Signal.Forecast) }, string(signal.ForecastOff), signal.ForecastModes()...),
			func(o signal.Options) string { return string(o.Forecast) }).
			Describe("the seasonal forecast from the target's own history (a `prometheus` source's read from Prometheus, the others' kept in memory): `on` scales out ahead of a predicted rise (never in), `only` publishes it (`/scale`'s `forecast`, `barometer_forecast_value`) without acting, `off`"),
		keyschema.Float("activationWorkingSetTarget", func(t *Trigger) *float64 { return &t.ActivationWorkingSetTarget }, pressure.DefaultActivationWorkingSetTarget, keyschema.Between(0, 1e15)).
			Describe("working set per replica that reads 1.0; `0` turns the dimension off"),
	}
}

// startProfile starts the signal's options from the profile, so that each
// option key's default is the profile's.
func startProfile(t *Trigger, _ *keyschema.Context) {
	o, err := signal.ProfileOptions(t.Profile)
	if err == nil { // the Enum admitted only known profiles
		t.Signal = o
	}
}

// signalFloat, signalDuration, signalInt and signalBool declare a key of
// one of the signal's options whose default is the profile's (profiled),
// from the option's field alone.
func signalFloat(name string, f func(*signal.Options) *float64, r keyschema.FloatRange) keyschema.Key[Trigger] {
	return profiled(keyschema.Float(name, func(t *Trigger) *float64 { return f(&t.Signal) }, 0, r), func(o signal.Options) string { return keyschema.FormatFloat(*f(&o)) })
}

func signalDuration(name string, f func(*signal.Options) *time.Duration) keyschema.Key[Trigger] {
	return profiled(keyschema.Duration(name, func(t *Trigger) *time.Duration { return f(&t.Signal) }, 0, 0, day, false), func(o signal.Options) string { return f(&o).String() })
}

func signalInt(name string, f func(*signal.Options) *int, hi int) keyschema.Key[Trigger] {
	return profiled(keyschema.Int(name, func(t *Trigger) *int { return f(&t.Signal) }, 0, 0, hi), func(o signal.Options) string { return strconv.Itoa(*f(&o)) })
}

func signalBool(name string, f func(*signal.Options) *bool) keyschema.Key[Trigger] {
	return profiled(keyschema.Bool(name, func(t *Trigger) *bool { return f(&t.Signal) }, false), func(o signal.Options) string { return strconv.FormatBool(*f(&o)) })
}

// profiled makes a signal option key's default the profile's: the key
// takes no default of its own (startProfile put the profile's in place),
// and its documented default names each profile's.
func profiled[T any](k keyschema.Key[Trigger], get func(signal.Options) T) keyschema.Key[Trigger] {
	var parts []string
	for _, name := range signal.ProfileNames() {
		o, _ := signal.ProfileOptions(name)
		parts = append(parts, fmt.Sprintf("%s: `%v`", name, get(o)))
	}
	return k.Preset().For(onlyPressure...).InSimulator().Documented(strings.Join(parts, "; "))
}
