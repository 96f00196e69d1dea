package control

import "github.com/barometer-scaler/barometer/pkg/sim"

// NaiveSetting names the naive controller with its dampers.
func NaiveSetting(name string, o NaiveOptions) sim.Setting {
	return sim.Setting{Name: name, New: func(m sim.Model) sim.Controller { return NewNaive(m, o) }}
}

// HPASetting names the HPA's algorithm with a behavior.
func HPASetting(name string, o HPAOptions) sim.Setting {
	return sim.Setting{Name: name, New: func(m sim.Model) sim.Controller { return NewHPA(m, o) }}
}

// BarometerSetting names Barometer's controller with options, scored as
// d says; the name is followed by d's, so every row says which.
func BarometerSetting(name string, o BarometerOptions, d Deployment) sim.Setting {
	return sim.Setting{Name: name + ", " + d.String(), New: func(m sim.Model) sim.Controller {
		b := NewBarometer(m, o)
		if d == RawSignal {
			return b
		}
		return NewDeployed(m, b, b.Target(), d.hpaOptions())
	}}
}

// TunedMaxHoldSetting is the tuned baseline: for each series and delay,
// the grid's pick (TuneMaxHold).
func TunedMaxHoldSetting(name string, g MaxHoldGrid) sim.Setting {
	return sim.Setting{Name: name, Tune: func(cfg sim.Config, s sim.Series) sim.Controller {
		return NewMaxHold(cfg.Model, TuneMaxHold(cfg, s, g).Options)
	}}
}
