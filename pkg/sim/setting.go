package sim

// Setting is a named controller configuration; New builds a fresh
// controller for each run.
type Setting struct {
	Name string
	New  func(Model) Controller
}

// NaiveSetting names the naive controller with its dampers.
func NaiveSetting(name string, o NaiveOptions) Setting {
	return Setting{Name: name, New: func(m Model) Controller { return NewNaive(m, o) }}
}

// HPASetting names the HPA's algorithm with a behavior.
func HPASetting(name string, o HPAOptions) Setting {
	return Setting{Name: name, New: func(m Model) Controller { return NewHPA(m, o) }}
}

// BarometerSetting names Barometer's controller with options.
func BarometerSetting(name string, o BarometerOptions) Setting {
	return Setting{Name: name, New: func(m Model) Controller { return NewBarometer(m, o) }}
}

// Scan runs a setting once per delay.
func Scan(cfg Config, s Series, set Setting, delays []int) []Result {
	out := make([]Result, len(delays))
	for i, d := range delays {
		c := cfg
		c.Delay = d
		out[i] = Run(c, s, set.New(c.Model))
	}
	return out
}
