package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// controllerFlags names the flags that belong to one controller.
var controllerFlags = map[string][]string{
	"naive": {"window", "step"},
	"hpa": {"hpa-tolerance", "hpa-up-window", "hpa-down-window", "hpa-period",
		"hpa-up-percent", "hpa-up-pods", "hpa-down-percent"},
	"barometer": {"preset", "keda-target", "ewma-half-life", "gate-window", "resource-threshold",
		"signal-min-replicas", "trend-window", "hysteresis", "surge"},
}

// simulateOptions are the parsed flags.
type simulateOptions struct {
	trace, event, controller, preset, svgFile, report    string
	delay, startup, window, step, maxReplicas, initial   int
	upPercent, upPods, downPercent, minReplicas, trend   int
	turn, upWindow, downWindow, period, ewma, gate       time.Duration
	saturation, occupancy, tolerance, kedaTarget, resThr float64
	hysteresis                                           float64
	table, json, surge                                   bool
	set                                                  map[string]bool
}

// runSimulate is `scaler simulate`: one run, the reference's tables, JSON,
// an SVG picture, or the decision-quality report.
func runSimulate(args []string, stdout io.Writer) error {
	o, fs, err := parseSimulate(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "usage: scaler simulate [flags]")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil
	}
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	if o.report != "" {
		return writeReport(o.report)
	}
	m := sim.Model{Saturation: o.saturation, Target: o.occupancy, MinReplicas: 1, MaxReplicas: o.maxReplicas, InitialReplicas: o.initial}
	series, err := loadTrace(o)
	if err != nil {
		return fmt.Errorf("simulate: --trace: %w", err)
	}
	setting := o.setting()
	cfg := sim.Config{Model: m, Delay: o.delay, StartupTurns: o.startup, Turn: o.turn}
	res := sim.Run(cfg, series, setting.New(m))
	if o.svgFile != "" {
		var b bytes.Buffer
		title := fmt.Sprintf("%s, %s, metric delay %d", series.Name, setting.Name, o.delay)
		if err := sim.Chart(m, title, []sim.Named{{Name: scoreLine(res.Score), Result: res}}).Write(&b); err != nil {
			return err
		}
		if err := os.WriteFile(o.svgFile, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("simulate: --svg: %w", err)
		}
	}
	switch {
	case o.table:
		return writeTables(stdout, cfg, series, setting, o)
	case o.json:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Series       string     `json:"series"`
			Controller   string     `json:"controller"`
			Delay        int        `json:"delay"`
			StartupTurns int        `json:"startupTurns"`
			Turn         string     `json:"turn"`
			Score        sim.Score  `json:"score"`
			Steps        []sim.Step `json:"steps"`
		}{series.Name, setting.Name, o.delay, o.startup, o.turn.String(), res.Score, res.Steps})
	}
	var b bytes.Buffer
	if err := sim.WriteModel(&b, m, series); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nmetric delay %d turns, startup %d turns, %s per turn\n", o.delay, o.startup, o.turn)
	if err := sim.WriteSettings(&b, []sim.Row{{Name: setting.Name, Score: res.Score}}); err != nil {
		return err
	}
	s := res.Score
	fmt.Fprintf(&b, "peak replicas %d, reaction %d turns\n", s.Peak, s.Reaction)
	fmt.Fprintf(&b, "SPEC: θU %.1f %%, θO %.1f %%, τU %.1f %%, τO %.1f %%, υ %.1f %%, jitter %.2f /min\n",
		s.UnderAccuracy, s.OverAccuracy, s.UnderTimeshare, s.OverTimeshare, s.Instability, s.Jitter)
	_, err = stdout.Write(b.Bytes())
	return err
}

func parseSimulate(args []string) (simulateOptions, *flag.FlagSet, error) {
	m, hpa := sim.ReferenceModel(), sim.DefaultHPAOptions()
	var o simulateOptions
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.trace, "trace", "reference", "load trace: reference, jump, flash-crowd, slow-ramp, seed:N, or a CSV file (one load per line, or turn,load)")
	fs.StringVar(&o.event, "event", "60:90", "event window START:END scored as the jump, for a CSV trace")
	fs.IntVar(&o.delay, "delay", 0, "metric delay in turns")
	fs.IntVar(&o.startup, "startup", 0, "turns a new replica takes to become ready")
	fs.DurationVar(&o.turn, "turn", sim.DefaultTurn, "wall-clock length of one turn (HPA and signal clocks)")
	fs.StringVar(&o.controller, "controller", "naive", "naive, hpa or barometer")
	fs.BoolVar(&o.table, "table", false, "print the reference's tables: the delay scan 0..6 and the jump test")
	fs.BoolVar(&o.json, "json", false, "print the run as JSON (score and every turn)")
	fs.StringVar(&o.svgFile, "svg", "", "also draw load, required and supplied replicas to this SVG file")
	fs.StringVar(&o.report, "report", "", "regenerate the decision-quality report at this path (and its -delay3.svg beside it); takes no other flag")
	fs.Float64Var(&o.saturation, "saturation", m.Saturation, "requests/s one replica serves at saturation")
	fs.Float64Var(&o.occupancy, "occupancy", m.Target, "target occupancy per replica, in (0, 1]")
	fs.IntVar(&o.maxReplicas, "max-replicas", m.MaxReplicas, "replica ceiling")
	fs.IntVar(&o.initial, "initial-replicas", m.InitialReplicas, "replicas before turn 0")
	fs.IntVar(&o.window, "window", 0, "naive: wait window, turns a scale-in must be wanted in a row")
	fs.IntVar(&o.step, "step", 0, "naive: step limit, most replicas changed per turn (0: none)")
	fs.Float64Var(&o.tolerance, "hpa-tolerance", hpa.Tolerance, "hpa: no change while |1 - metric/target| <= this")
	fs.DurationVar(&o.upWindow, "hpa-up-window", hpa.ScaleUp.StabilizationWindow, "hpa: scale-up stabilization window")
	fs.DurationVar(&o.downWindow, "hpa-down-window", hpa.ScaleDown.StabilizationWindow, "hpa: scale-down stabilization window")
	fs.DurationVar(&o.period, "hpa-period", 15*time.Second, "hpa: period of every policy")
	fs.IntVar(&o.upPercent, "hpa-up-percent", 100, "hpa: scale-up percent policy (0: none)")
	fs.IntVar(&o.upPods, "hpa-up-pods", 4, "hpa: scale-up pods policy (0: none)")
	fs.IntVar(&o.downPercent, "hpa-down-percent", 100, "hpa: scale-down percent policy")
	fs.StringVar(&o.preset, "preset", "default", "barometer: default, delay-aware or best; the flags below override it")
	fs.Float64Var(&o.kedaTarget, "keda-target", 0, "barometer: KEDA targetValue, replicas = ceil(ScaleValue / it) (0: the occupancy target)")
	fs.DurationVar(&o.ewma, "ewma-half-life", 0, "barometer: EWMA half-life of a falling signal, 0 for none (unset: the preset's)")
	fs.DurationVar(&o.gate, "gate-window", 0, "barometer: scale-in gate window (unset: the preset's)")
	fs.Float64Var(&o.resThr, "resource-threshold", 0, "barometer: resource pressure at or above which scale-in is blocked (unset: the preset's)")
	fs.IntVar(&o.minReplicas, "signal-min-replicas", 0, "barometer: the signal's MinReplicas floor (unset: the preset's)")
	fs.IntVar(&o.trend, "trend-window", 0, "barometer: samples in the lead's trend, 0 or 1 for no lead (unset: the preset's)")
	fs.Float64Var(&o.hysteresis, "hysteresis", 0, "barometer: scale-in hysteresis on stale samples, 0.05 = 5 % (unset: the preset's)")
	fs.BoolVar(&o.surge, "surge", false, "barometer: saturation surge, 2n or n + 4 when stale (unset: the preset's)")
	if err := fs.Parse(args); err != nil {
		return o, fs, err
	}
	if fs.NArg() > 0 {
		return o, fs, fmt.Errorf("unexpected argument %q (all options are flags)", fs.Arg(0))
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	return o, fs, o.validate()
}

func (o simulateOptions) validate() error {
	if o.report != "" && len(o.set) > 1 {
		return errors.New("--report takes no other flag (the report's settings are fixed)")
	}
	if _, ok := controllerFlags[o.controller]; !ok {
		return fmt.Errorf("--controller %q (allowed: naive, hpa, barometer)", o.controller)
	}
	for c, names := range controllerFlags {
		for _, n := range names {
			if o.set[n] && c != o.controller {
				return fmt.Errorf("--%s applies to --controller %s (this run: %s)", n, c, o.controller)
			}
		}
	}
	checks := []struct {
		bad  bool
		flag string
		want string
	}{
		{o.delay < 0, "delay", "a whole number >= 0"},
		{o.startup < 0, "startup", "a whole number >= 0"},
		{o.turn <= 0, "turn", "a duration > 0"},
		{o.table && o.json, "json", "not with --table"},
		{!(o.saturation > 0), "saturation", "a number > 0"},
		{!(o.occupancy > 0 && o.occupancy <= 1), "occupancy", "a number in (0, 1]"},
		{o.maxReplicas < 1, "max-replicas", "a whole number >= 1"},
		{o.initial < 1 || o.initial > o.maxReplicas, "initial-replicas", "1..--max-replicas"},
		{o.window < 0, "window", "a whole number >= 0"},
		{o.step < 0, "step", "a whole number >= 0"},
		{!(o.tolerance >= 0), "hpa-tolerance", "a number >= 0"},
		{o.upWindow < 0, "hpa-up-window", "a duration >= 0"},
		{o.downWindow < 0, "hpa-down-window", "a duration >= 0"},
		{o.period <= 0, "hpa-period", "a duration > 0"},
		{o.upPercent < 0, "hpa-up-percent", "a whole number >= 0"},
		{o.upPods < 0, "hpa-up-pods", "a whole number >= 0"},
		{o.upPercent == 0 && o.upPods == 0, "hpa-up-pods", "> 0 when --hpa-up-percent is 0"},
		{o.downPercent < 1 || o.downPercent > 100, "hpa-down-percent", "1..100"},
		{presetOptions(o.preset) == nil, "preset", "default, delay-aware or best"},
		{o.kedaTarget < 0, "keda-target", "a number >= 0"},
		{o.ewma < 0, "ewma-half-life", "a duration >= 0"},
		{o.gate < 0, "gate-window", "a duration >= 0"},
		{!(o.resThr >= 0), "resource-threshold", "a number >= 0"},
		{o.minReplicas < 0, "signal-min-replicas", "a whole number >= 0"},
		{o.trend < 0, "trend-window", "a whole number >= 0"},
		{!(o.hysteresis >= 0), "hysteresis", "a number >= 0"},
	}
	for _, c := range checks {
		if c.bad {
			return fmt.Errorf("--%s (allowed: %s)", c.flag, c.want)
		}
	}
	if _, _, err := parseEvent(o.event); err != nil {
		return fmt.Errorf("--event %q (allowed: START:END, 0 <= START <= END)", o.event)
	}
	return nil
}

func presetOptions(name string) func() sim.BarometerOptions {
	return map[string]func() sim.BarometerOptions{
		"default":     sim.DefaultBarometerOptions,
		"delay-aware": sim.DelayAwareBarometerOptions,
		"best":        sim.BestBarometerOptions,
	}[name]
}

// setting builds the chosen controller with its flags.
func (o simulateOptions) setting() sim.Setting {
	switch o.controller {
	case "hpa":
		h := sim.DefaultHPAOptions()
		h.Tolerance = o.tolerance
		h.ScaleUp.StabilizationWindow, h.ScaleDown.StabilizationWindow = o.upWindow, o.downWindow
		h.ScaleUp.Policies = nil
		if o.upPercent > 0 {
			h.ScaleUp.Policies = append(h.ScaleUp.Policies, sim.HPAPolicy{Type: sim.PercentPolicy, Value: o.upPercent, Period: o.period})
		}
		if o.upPods > 0 {
			h.ScaleUp.Policies = append(h.ScaleUp.Policies, sim.HPAPolicy{Type: sim.PodsPolicy, Value: o.upPods, Period: o.period})
		}
		h.ScaleDown.Policies = []sim.HPAPolicy{{Type: sim.PercentPolicy, Value: o.downPercent, Period: o.period}}
		return sim.HPASetting("HPA", h)
	case "barometer":
		b := presetOptions(o.preset)()
		s := &b.Signal
		for name, apply := range map[string]func(){
			"keda-target":         func() { b.Target = o.kedaTarget },
			"ewma-half-life":      func() { s.EwmaHalfLife = o.ewma },
			"gate-window":         func() { s.ScaleInGateWindow = o.gate },
			"resource-threshold":  func() { s.ResourceScaleInThreshold = o.resThr },
			"signal-min-replicas": func() { s.MinReplicas = o.minReplicas },
			"trend-window":        func() { b.Compensation.TrendWindow = o.trend },
			"hysteresis":          func() { b.Compensation.ScaleInHysteresis = o.hysteresis },
			"surge":               func() { b.Compensation.SaturationSurge = o.surge },
		} {
			if o.set[name] {
				apply()
			}
		}
		return sim.BarometerSetting("Barometer "+o.preset, b)
	}
	return sim.NaiveSetting(naiveName(o.window, o.step), sim.NaiveOptions{Window: o.window, Step: o.step})
}

// naiveName names the naive setting as the reference does.
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

func loadTrace(o simulateOptions) (sim.Series, error) {
	var s sim.Series
	switch name := o.trace; {
	case name == "reference":
		s = sim.Reference()
	case name == "jump":
		s = sim.JumpTest()
	case name == "flash-crowd":
		s = sim.FlashCrowd(7)
	case name == "slow-ramp":
		s = sim.SlowRamp(11)
	case strings.HasPrefix(name, "seed:"):
		seed, err := strconv.ParseInt(strings.TrimPrefix(name, "seed:"), 10, 64)
		if err != nil || seed <= 0 {
			return s, fmt.Errorf("%q (allowed: seed:N with N a whole number > 0)", name)
		}
		s = sim.Seeded(seed)
	default:
		f, err := os.Open(name)
		if err != nil {
			return s, fmt.Errorf("%w (allowed: reference, jump, flash-crowd, slow-ramp, seed:N, or a CSV file)", err)
		}
		defer f.Close()
		if s, err = sim.ReadCSV(f, filepath.Base(name)); err != nil {
			return s, err
		}
		s.EventStart, s.EventEnd, _ = parseEvent(o.event)
		return s, nil
	}
	if o.set["event"] {
		s.EventStart, s.EventEnd, _ = parseEvent(o.event)
	}
	return s, nil
}

func parseEvent(v string) (int, int, error) {
	a, b, ok := strings.Cut(v, ":")
	start, err1 := strconv.Atoi(a)
	end, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || start < 0 || end < start {
		return 0, 0, errors.New("bad event window")
	}
	return start, end, nil
}

// writeTables prints the reference's layout: the delay scan and the jump test.
func writeTables(w io.Writer, cfg sim.Config, s sim.Series, set sim.Setting, o simulateOptions) error {
	var b bytes.Buffer
	if err := sim.WriteModel(&b, cfg.Model, s); err != nil {
		return err
	}
	heading := set.Name
	if o.controller == "naive" && heading == "unadjusted" {
		heading = "no wait window and no step limit"
	}
	fmt.Fprintf(&b, "\nmetric delay is scanned (%s):\n", heading)
	delays := []int{0, 1, 2, 3, 4, 5, 6}
	var scores []sim.Score
	for _, r := range sim.Scan(cfg, s, set, delays) {
		scores = append(scores, r.Score)
	}
	if err := sim.WriteDelayScan(&b, delays, scores); err != nil {
		return err
	}
	jumpDelays := []int{0, 3, 6}
	row := sim.JumpRow{Name: set.Name}
	for _, r := range sim.Scan(cfg, sim.JumpTest(), set, jumpDelays) {
		row.Reactions = append(row.Reactions, r.Score.Reaction)
	}
	b.WriteString("\njump test -- reaction turn when load jumps from 800 to 3200 requests/s at turn 60:\n")
	if err := sim.WriteJump(&b, jumpDelays, []sim.JumpRow{row}); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

func scoreLine(s sim.Score) string {
	return fmt.Sprintf("total %d replica-turns, shortfall %d turns, oscillation %d", s.Total, s.Shortfall, s.Oscillation)
}

// reportPicture is the picture's file name beside a report at path.
func reportPicture(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".md") + "-delay3.svg"
}

// writeReport regenerates the report and its picture.
func writeReport(path string) error {
	var md, pic bytes.Buffer
	if err := sim.WriteReport(&md, &pic, reportPicture(path)); err != nil {
		return err
	}
	if err := os.WriteFile(path, md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("simulate: --report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), reportPicture(path)), pic.Bytes(), 0o644); err != nil {
		return fmt.Errorf("simulate: --report: %w", err)
	}
	return nil
}
