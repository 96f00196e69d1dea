package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/barometer-scaler/barometer/pkg/signal"
)

// signalFlags are the Barometer controller's flags that set a pkg/signal
// option: each name maps to the Options field it sets, and apply copies
// the parsed value onto a profile's options. They are defined together in
// defineSignalFlags, the one place that names them.
type signalFlags struct {
	parsed signal.Options
	field  map[string]string                    // flag -> Options field
	apply  map[string]func(dst *signal.Options) // flag -> copy the parsed value
}

// defineSignalFlags defines one flag per signal option the simulator
// exposes. An unset flag leaves the profile's value.
func defineSignalFlags(fs *flag.FlagSet) *signalFlags {
	f := &signalFlags{field: map[string]string{}, apply: map[string]func(*signal.Options){}}
	src := &f.parsed
	add := func(name, field string, ptr func(*signal.Options) any, usage string) {
		switch p := ptr(src).(type) {
		case *time.Duration:
			fs.DurationVar(p, name, 0, usage)
		case *float64:
			fs.Float64Var(p, name, 0, usage)
		case *int:
			fs.IntVar(p, name, 0, usage)
		case *bool:
			fs.BoolVar(p, name, false, usage)
		}
		f.field[name] = field
		f.apply[name] = func(dst *signal.Options) {
			switch p := ptr(dst).(type) {
			case *time.Duration:
				*p = *ptr(src).(*time.Duration)
			case *float64:
				*p = *ptr(src).(*float64)
			case *int:
				*p = *ptr(src).(*int)
			case *bool:
				*p = *ptr(src).(*bool)
			}
		}
	}
	const unset = " (unset: the profile's)"
	add("ewma-half-life", "EwmaHalfLife", func(o *signal.Options) any { return &o.EwmaHalfLife }, "barometer: EWMA half-life of a falling signal, 0 for none"+unset)
	add("gate-window", "ScaleInGateWindow", func(o *signal.Options) any { return &o.ScaleInGateWindow }, "barometer: scale-in gate window"+unset)
	add("resource-threshold", "ResourceScaleInThreshold", func(o *signal.Options) any { return &o.ResourceScaleInThreshold }, "barometer: resource pressure at or above which scale-in is blocked"+unset)
	add("signal-min-replicas", "MinReplicas", func(o *signal.Options) any { return &o.MinReplicas }, "barometer: the signal's MinReplicas floor"+unset)
	add("replica-startup", "ReplicaStartup", func(o *signal.Options) any { return &o.ReplicaStartup }, "barometer: how long a new replica takes to count, added to the sample's age as the lag (--startup is in turns: set this to --startup x --turn for the lead to cover it)"+unset)
	add("lead-window", "LeadWindow", func(o *signal.Options) any { return &o.LeadWindow }, "barometer: samples in the lead's trend, 0 for no lead"+unset)
	add("lead-significance", "LeadSignificance", func(o *signal.Options) any { return &o.LeadSignificance }, "barometer: noise widths the trend's rise must exceed to lead"+unset)
	add("hysteresis", "ScaleInHysteresis", func(o *signal.Options) any { return &o.ScaleInHysteresis }, "barometer: scale-in margin on stale samples, 0.05 = 5 %"+unset)
	add("noise-margin", "ScaleInNoiseMargin", func(o *signal.Options) any { return &o.ScaleInNoiseMargin }, "barometer: scale-in margin on stale samples in noise widths"+unset)
	add("surge", "SaturationSurge", func(o *signal.Options) any { return &o.SaturationSurge }, "barometer: saturation surge, 2n or n + 4 when stale"+unset)
	add("surge-level", "SurgeLevel", func(o *signal.Options) any { return &o.SurgeLevel }, "barometer: dominant pressure at which a sample is saturated"+unset)
	return f
}

// options returns the profile's options with every set flag applied, or
// an error naming the flag of a value out of range.
func (f *signalFlags) options(profile string, set map[string]bool) (signal.Options, error) {
	o, err := signal.ProfileOptions(profile)
	if err != nil {
		return o, err
	}
	for name, apply := range f.apply {
		if set[name] {
			apply(&o)
		}
	}
	var oe *signal.OptionError
	if err := o.Validate(); errors.As(err, &oe) {
		for name, field := range f.field {
			if field == oe.Field {
				return o, fmt.Errorf("--%s (allowed: %s)", name, oe.Allowed)
			}
		}
		return o, err
	}
	return o, nil
}
