package command

import (
	"bytes"
	"fmt"
	"io"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/control"
	"github.com/barometer-scaler/barometer/pkg/sim/policies"
)

// compareSettings are every controller --compare runs on s: the anchors
// with their defaults, the tuned baseline tuned to s at cfg's delay,
// Barometer once per profile (with the signal's flags applied to each,
// scored as the flags say), and the replica policies of pkg/policy. note
// says how the baseline was tuned.
func compareSettings(cfg sim.Config, s sim.Series, o *simulateOptions) (sets []sim.Setting, note string, err error) {
	maxhold, note := tunedMaxHold(cfg, s)
	sets = []sim.Setting{
		control.NaiveSetting("naive", control.NaiveOptions{}),
		control.NaiveSetting("naive, window 3 + step 1", control.NaiveOptions{Window: 3, Step: 1}),
		control.HPASetting("HPA, default behavior", control.DefaultHPAOptions()),
		control.KPASetting("KPA, Knative defaults", o.kpa),
		maxhold,
	}
	for _, p := range signal.ProfileNames() {
		so, err := o.signalOptions(p)
		if err != nil {
			return nil, "", err
		}
		name := "Barometer, profile " + p
		if p == signal.DefaultProfile {
			name += " (default)"
		}
		sets = append(sets, control.BarometerSetting(o.barometerName(name, so), o.barometerOptions(so), o.deployment()))
	}
	// The policies' launch TTL is a trigger key: parsed as one (for any
	// replica policy; every one reads it).
	t, err := o.keys.trigger(policy.Fixed.Name, nil)
	if err != nil {
		return nil, "", err
	}
	w := o.wiring
	w.Launch.TTL = t.Policy.LaunchTTL
	return append(sets, policies.Settings(cfg.Model, w)...), note, nil
}

// runCompare runs every controller on one trace and prints one table; with
// --svg it draws every run, one panel each, in one picture.
func runCompare(w io.Writer, cfg sim.Config, s sim.Series, queue bool, o *simulateOptions) error {
	sets, note, err := compareSettings(cfg, s, o)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	var b bytes.Buffer
	if err := sim.WriteModel(&b, cfg.Model, s); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nmetric delay %d turns, startup %d turns, %s per turn\n", o.delay, o.startup, cfg.Turn)
	writeNote(&b, note)
	b.WriteString("\n")
	width := 0
	for _, set := range sets {
		width = max(width, len(set.Name))
	}
	fmt.Fprintf(&b, "%-*s %6s %9s %11s %6s %4s %8s", width, "setting", "total", "shortfall", "oscillation", "excess", "peak", "reaction")
	if queue {
		fmt.Fprintf(&b, " %8s", "backlog")
	}
	b.WriteString("\n")
	var runs []sim.Named
	for _, set := range sets {
		res := sim.Run(cfg, s, set.Controller(cfg, s))
		sc := res.Score
		fmt.Fprintf(&b, "%-*s %6d %9d %11d %6d %4d %8d", width, set.Name, sc.Total, sc.Shortfall, sc.Oscillation, sc.Excess, sc.Peak, sc.Reaction)
		if queue {
			fmt.Fprintf(&b, " %8d", sc.BacklogTurns)
		}
		b.WriteString("\n")
		runs = append(runs, sim.Named{Name: set.Name + ": " + scoreLine(sc), Result: res})
	}
	if o.svgFile != "" {
		title := fmt.Sprintf("%s at metric delay %d: every controller", s.Name, o.delay)
		if err := writeSVG(o.svgFile, cfg.Model, title, runs); err != nil {
			return err
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}
