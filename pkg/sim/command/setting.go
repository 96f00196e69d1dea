package command

import (
	"fmt"
	"strconv"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/control"
	"github.com/barometer-scaler/barometer/pkg/sim/policies"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// signalOptions are the barometer controller's signal options: the
// profile's (profile, or the --profile flag's when ""), with the signal
// flags applied, parsed as a trigger's. The floor and the surge's target
// are the model's (sim.BarometerOptions), not a trigger's.
func (o *simulateOptions) signalOptions(profile string) (signal.Options, error) {
	var extra map[string]string
	if profile != "" {
		extra = map[string]string{trigger.KeyProfile: profile}
	}
	t, err := o.keys.trigger(signal.PolicyPressure, extra)
	if err != nil {
		return signal.Options{}, err
	}
	so := t.Signal
	so.SurgeTarget, so.FloorTarget = 0, 0
	return so, nil
}

// policySetting builds a replica policy's controller from the flags, read
// at m: the documented defaults, the model's bounds and, unless set, its
// target occupancy (policies.ModelKeys). Every value was checked already,
// the keys' by the trigger parse and the model's by validate.
func (o *simulateOptions) policySetting(m sim.Model, k policy.Kind) (sim.Setting, error) {
	model := policies.ModelKeys(k, m)
	for key := range model {
		if o.keys.isSet(key) {
			delete(model, key)
		}
	}
	t, err := o.keys.trigger(k.Name, model)
	if err != nil {
		return sim.Setting{}, err
	}
	w := o.wiring
	w.Launch.TTL = t.Policy.LaunchTTL
	s, err := policies.Setting(k.Name, t.Policy.Options, w)
	if err != nil {
		return s, fmt.Errorf("--controller %s: %w", k.Name, err)
	}
	return s, nil
}

// setting builds the chosen controller with its flags, for a run of cfg
// on s (the tuned baseline is tuned to them); note, when not empty, says
// how it was tuned.
func (o *simulateOptions) setting(cfg sim.Config, s sim.Series) (set sim.Setting, note string, err error) {
	if o.controller == controllerMaxHold {
		set, note = tunedMaxHold(cfg, s)
		return set, note, nil
	}
	set, err = o.fixedSetting(cfg.Model)
	return set, "", err
}

// tunedMaxHold is the tuned baseline, tuned on the run's trace at its
// delay over the default grid, and a sentence saying what was picked.
func tunedMaxHold(cfg sim.Config, s sim.Series) (sim.Setting, string) {
	g := control.DefaultMaxHoldGrid()
	t := control.TuneMaxHold(cfg, s, g)
	set := t.Setting()
	set.Name = fmt.Sprintf("maxhold, tuned: W=%d h=%d", t.Options.Window, t.Options.Hold)
	pick := fmt.Sprintf("within the %s %% shortfall budget, the fewest replica-turns", strconv.FormatFloat(100*g.ShortfallBudget, 'f', -1, 64))
	if !t.WithinBudget {
		pick = fmt.Sprintf("no setting within the %s %% shortfall budget, so the fewest shortfall turns", strconv.FormatFloat(100*g.ShortfallBudget, 'f', -1, 64))
	}
	note := fmt.Sprintf("maxhold tuned on this trace at delay %d over W %d..%d, h %d..%d (%s): W=%d h=%d, short in %d of %d turns",
		cfg.Delay, g.Windows[0], g.Windows[len(g.Windows)-1], g.Holds[0], g.Holds[len(g.Holds)-1], pick,
		t.Options.Window, t.Options.Hold, t.Score.Shortfall, len(s.Load))
	return set, note
}

// fixedSetting builds a controller that is not tuned to the trace.
func (o *simulateOptions) fixedSetting(m sim.Model) (sim.Setting, error) {
	if k, ok := policy.KindNamed(o.controller); ok {
		return o.policySetting(m, k)
	}
	switch o.controller {
	case controllerHPA:
		h := control.DefaultHPAOptions()
		h.Tolerance = o.tolerance
		h.ScaleUp.StabilizationWindow, h.ScaleDown.StabilizationWindow = o.upWindow, o.downWindow
		h.ScaleUp.Policies = nil
		if o.upPercent > 0 {
			h.ScaleUp.Policies = append(h.ScaleUp.Policies, control.HPAPolicy{Type: control.PercentPolicy, Value: o.upPercent, Period: o.period})
		}
		if o.upPods > 0 {
			h.ScaleUp.Policies = append(h.ScaleUp.Policies, control.HPAPolicy{Type: control.PodsPolicy, Value: o.upPods, Period: o.period})
		}
		h.ScaleDown.Policies = []control.HPAPolicy{{Type: control.PercentPolicy, Value: o.downPercent, Period: o.period}}
		return control.HPASetting("HPA", h), nil
	case controllerKPA:
		return control.KPASetting("KPA", o.kpa), nil
	case controllerBarometer:
		so, err := o.signalOptions("")
		if err != nil {
			return sim.Setting{}, err
		}
		profile := signal.DefaultProfile
		if v, ok := o.keys.values[trigger.KeyProfile]; ok {
			profile = v
		}
		name := "Barometer " + profile
		return control.BarometerSetting(o.barometerName(name, so), o.barometerOptions(so), o.deployment()), nil
	}
	return control.NaiveSetting(naiveName(o.window, o.step), control.NaiveOptions{Window: o.window, Step: o.step}), nil
}

// barometerOptions are the controller's options for the signal's options
// so: the flags' KEDA target and working set, and a backtest's history.
func (o *simulateOptions) barometerOptions(so signal.Options) control.BarometerOptions {
	b := control.BarometerOptions{Signal: so, Target: o.kedaTarget, WorkingSet: o.workingSet}
	if o.history != nil {
		b.History = o.history
	}
	return b
}

// barometerName is name with what the flags add to the signal's input:
// the working set, and a backtest's history where the forecast reads it.
func (o *simulateOptions) barometerName(name string, so signal.Options) string {
	if o.workingSet {
		name += ", working set"
	}
	if o.history != nil && (so.Forecast == signal.ForecastOn || so.Forecast == signal.ForecastOnly) {
		name += ", history from Prometheus"
	}
	return name
}

// naiveName names the naive setting as the model's tables do.
func naiveName(window, step int) string {
	switch {
	case window > 1 && step > 0:
		return fmt.Sprintf("window %d + step %d", window, step)
	case window > 1:
		return fmt.Sprintf("wait window %d", window)
	case step > 0:
		return fmt.Sprintf("step limit %d", step)
	}
	return "unadjusted"
}
