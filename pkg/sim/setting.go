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
