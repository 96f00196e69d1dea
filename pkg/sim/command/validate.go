package command

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/policy"
)

// flagControllers names, for each flag of the simulator's own that not
// every controller reads, the controllers that read it. The flags of
// trigger keys (the policies' and the signal's options) are derived from
// the trigger schema (defineKeyFlags), which says which controllers read
// them.
var flagControllers = map[string][]string{
	"window": {controllerNaive}, "step-limit": {controllerNaive},
	"hpa-tolerance": {controllerHPA}, "hpa-up-window": {controllerHPA}, "hpa-down-window": {controllerHPA}, "hpa-period": {controllerHPA},
	"hpa-up-percent": {controllerHPA}, "hpa-up-pods": {controllerHPA}, "hpa-down-percent": {controllerHPA},
	"kpa-stable-window": {controllerKPA}, "kpa-panic-percent": {controllerKPA}, "kpa-panic-threshold": {controllerKPA},
	"kpa-max-up-rate": {controllerKPA}, "kpa-max-down-rate": {controllerKPA},
	"keda-target": {controllerBarometer}, "raw-signal": {controllerBarometer}, "hpa-default-behavior": {controllerBarometer}, "working-set": {controllerBarometer},
	"current-replicas": policy.Names(),
}

// compareFlags are the simulator's own flags --compare applies: the KPA's,
// the KEDA target Barometer is read at and how it is scored, and the
// policies' wiring (the key
// flags it applies are keyFlags.inCompare's).
var compareFlags = map[string]bool{
	"kpa-stable-window": true, "kpa-panic-percent": true, "kpa-panic-threshold": true, "kpa-max-up-rate": true,
	"kpa-max-down-rate": true, "keda-target": true, "raw-signal": true, "hpa-default-behavior": true, "working-set": true, "current-replicas": true,
}

// errNotInCompare is the refusal of a flag --compare does not apply.
func errNotInCompare(name string) error {
	return fmt.Errorf("--%s does not apply to --compare (it runs the other controllers with their defaults)", name)
}

func (o *simulateOptions) validate() error {
	if o.report != "" && len(o.set) > 1 {
		return errors.New("--report takes no other flag (the report's settings are fixed)")
	}
	if !slices.Contains(controllers, o.controller) {
		return fmt.Errorf("--controller %q (allowed: %s)", o.controller, strings.Join(controllers, ", "))
	}
	if o.compare && (o.set["controller"] || o.table || o.json) {
		return errors.New("--compare runs every controller (not with --controller, --table or --json)")
	}
	if err := o.validateApplies(); err != nil {
		return err
	}
	if err := o.prom.Validate(o.set); err != nil {
		return err
	}
	for _, c := range o.ranges() {
		if c.bad {
			return fmt.Errorf("--%s (allowed: %s)", c.flag, c.want)
		}
	}
	if _, _, err := parseEvent(o.event); err != nil {
		return fmt.Errorf("--event %q (allowed: START:END, 0 <= START <= END)", o.event)
	}
	if o.controller == controllerBarometer || o.compare {
		if _, err := o.signalOptions(""); err != nil {
			return err
		}
	}
	return nil
}

// validateApplies refuses a flag set for a controller that does not read
// it, or with --compare when --compare does not apply it.
func (o *simulateOptions) validateApplies() error {
	for _, name := range slices.Sorted(maps.Keys(flagControllers)) {
		cs := flagControllers[name]
		switch {
		case !o.set[name]:
		case o.compare && !compareFlags[name]:
			return errNotInCompare(name)
		case !o.compare && !slices.Contains(cs, o.controller):
			return fmt.Errorf("--%s applies to --controller %s (this run: %s)", name, strings.Join(cs, ", "), o.controller)
		}
	}
	return o.keys.check(o.set, o.controller, o.compare)
}

// rangeCheck is one flag's value out of its range.
type rangeCheck struct {
	bad  bool
	flag string
	want string
}

// ranges are the simulator's own flags' ranges, in the order they are
// reported.
func (o *simulateOptions) ranges() []rangeCheck {
	return []rangeCheck{
		{o.delay < 0, "delay", "a whole number >= 0"},
		{o.startup < 0, "startup", "a whole number >= 0"},
		{o.turn <= 0, "turn", "a duration > 0"},
		{o.table && o.json, "json", "not with --table"},
		{o.rawSignal && o.hpaDefaultBehavior, "hpa-default-behavior", "not with --raw-signal (the raw signal has no HPA)"},
		{!(o.saturation > 0), "saturation", "a number > 0"},
		{!(o.occupancy > 0 && o.occupancy <= 1), "occupancy", "a number in (0, 1]"},
		{o.floor < 1, "min-replicas", "a whole number >= 1"},
		{o.maxReplicas < o.floor, "max-replicas", "a whole number >= --min-replicas"},
		{o.initial < o.floor || o.initial > o.maxReplicas, "initial-replicas", "--min-replicas..--max-replicas"},
		{o.window < 0, "window", "a whole number >= 0"},
		{o.step < 0, "step-limit", "a whole number >= 0"},
		{o.set["step"] && o.stepIsLimit && o.controller != controllerNaive, "step", "a duration with --from-prometheus; a whole number (the step limit) with --controller naive only"},
		{!(o.tolerance >= 0), "hpa-tolerance", "a number >= 0"},
		{o.upWindow < 0, "hpa-up-window", "a duration >= 0"},
		{o.downWindow < 0, "hpa-down-window", "a duration >= 0"},
		{o.period <= 0, "hpa-period", "a duration > 0"},
		{o.upPercent < 0, "hpa-up-percent", "a whole number >= 0"},
		{o.upPods < 0, "hpa-up-pods", "a whole number >= 0"},
		{o.upPercent == 0 && o.upPods == 0, "hpa-up-pods", "> 0 when --hpa-up-percent is 0"},
		{o.downPercent < 1 || o.downPercent > 100, "hpa-down-percent", "1..100"},
		{!(o.kedaTarget >= 0), "keda-target", "a number >= 0"},
		{o.kpa.StableWindow <= 0, "kpa-stable-window", "a duration > 0"},
		{!(o.kpa.PanicWindowPercent > 0 && o.kpa.PanicWindowPercent <= 100), "kpa-panic-percent", "a number in (0, 100]"},
		{!(o.kpa.PanicThreshold > 1), "kpa-panic-threshold", "a number > 1"},
		{!(o.kpa.MaxScaleUpRate > 1), "kpa-max-up-rate", "a number > 1"},
		{!(o.kpa.MaxScaleDownRate > 1), "kpa-max-down-rate", "a number > 1"},
	}
}
