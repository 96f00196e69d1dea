package sim

// Setting is a named controller configuration; New builds a fresh
// controller for each run. A tuned setting (the tuned baseline) has Tune
// instead of New: it picks its controller for each series and delay.
type Setting struct {
	Name string
	New  func(Model) Controller
	Tune func(cfg Config, s Series) Controller
}

// Controller builds a fresh controller for one run of cfg on s.
func (set Setting) Controller(cfg Config, s Series) Controller {
	if set.Tune != nil {
		return set.Tune(cfg, s)
	}
	return set.New(cfg.Model)
}

// NaiveSetting names the naive controller with its dampers.
func NaiveSetting(name string, o NaiveOptions) Setting {
	return Setting{Name: name, New: func(m Model) Controller { return NewNaive(m, o) }}
}

// HPASetting names the HPA's algorithm with a behavior.
func HPASetting(name string, o HPAOptions) Setting {
	return Setting{Name: name, New: func(m Model) Controller { return NewHPA(m, o) }}
}

// BarometerSetting names Barometer's controller with options, scored as
// d says; the name is followed by d's, so every row says which.
func BarometerSetting(name string, o BarometerOptions, d Deployment) Setting {
	return Setting{Name: name + ", " + d.String(), New: func(m Model) Controller {
		b := NewBarometer(m, o)
		if d == RawSignal {
			return b
		}
		return NewDeployed(m, b, b.Target(), d.hpaOptions())
	}}
}

// TunedMaxHoldSetting is the tuned baseline: for each series and delay,
// the grid's pick (TuneMaxHold).
func TunedMaxHoldSetting(name string, g MaxHoldGrid) Setting {
	return Setting{Name: name, Tune: func(cfg Config, s Series) Controller {
		return NewMaxHold(cfg.Model, TuneMaxHold(cfg, s, g).Options)
	}}
}

// Scan runs a setting once per delay.
func Scan(cfg Config, s Series, set Setting, delays []int) []Result {
	out := make([]Result, len(delays))
	for i, d := range delays {
		c := cfg
		c.Delay = d
		out[i] = Run(c, s, set.Controller(c, s))
	}
	return out
}
