package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/policies"
	"github.com/barometer-scaler/barometer/pkg/sim/report"
)

// controllers are the --controller values, in the order the help lists them.
var controllers = []string{"naive", "hpa", "kpa", "barometer", policy.PolicyQueue, policy.PolicyFullyElastic,
	policy.PolicyMaxCount, policy.PolicyPoolWithThreshold, policy.PolicyFixed}

// replicaPolicies are the controllers that drive pkg/policy.
var replicaPolicies = controllers[4:]

// flagControllers names, for each flag that not every controller reads,
// the controllers that read it: the simulator's own flags. The flags of
// trigger keys (the policies' and the signal's options) are derived from
// the trigger schema (defineKeyFlags), which says which controllers read
// them.
var flagControllers = map[string][]string{
	"window": {"naive"}, "step-limit": {"naive"},
	"hpa-tolerance": {"hpa"}, "hpa-up-window": {"hpa"}, "hpa-down-window": {"hpa"}, "hpa-period": {"hpa"},
	"hpa-up-percent": {"hpa"}, "hpa-up-pods": {"hpa"}, "hpa-down-percent": {"hpa"},
	"kpa-stable-window": {"kpa"}, "kpa-panic-percent": {"kpa"}, "kpa-panic-threshold": {"kpa"},
	"kpa-max-up-rate": {"kpa"}, "kpa-max-down-rate": {"kpa"},
	"keda-target": {"barometer"}, "current-replicas": replicaPolicies,
}

// compareFlags are the controller flags --compare applies (besides the
// signal's, which it applies to every profile): the KPA's, the KEDA target
// Barometer is read at, and the policies' wiring.
var compareFlags = map[string]bool{
	"kpa-stable-window": true, "kpa-panic-percent": true, "kpa-panic-threshold": true, "kpa-max-up-rate": true,
	"kpa-max-down-rate": true, "keda-target": true, "launch-ttl": true, "current-replicas": true,
}

// simulateOptions are the parsed flags.
type simulateOptions struct {
	trace, event, controller, svgFile, report          string
	delay, startup, window, step, maxReplicas, initial int
	upPercent, upPods, downPercent                     int
	turn, upWindow, downWindow, period                 time.Duration
	saturation, occupancy, tolerance, kedaTarget       float64
	table, json, compare, stepIsLimit                  bool
	set                                                map[string]bool
	floor                                              int
	wiring                                             policies.Wiring
	kpa                                                sim.KPAOptions
	keys                                               *keyFlags
	prom                                               promTrace
}

// runSimulate is `scaler simulate`: one run, the metric-delay model's tables
// (docs/semantics.md, "The tables and the jump test"), JSON, an SVG
// picture, or the decision-quality report.
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
	var (
		series sim.Series
		queue  *sim.QueueTrace
	)
	if o.prom.server != "" {
		if series, err = o.prom.load(context.Background()); err != nil {
			return fmt.Errorf("simulate: %w", err)
		}
		if !o.set["turn"] {
			o.turn = o.prom.step
		}
		if o.set["event"] {
			series.EventStart, series.EventEnd, _ = parseEvent(o.event)
		}
	} else if series, queue, err = loadTrace(o); err != nil {
		return fmt.Errorf("simulate: --trace: %w", err)
	}
	saturation := o.saturation
	if queue != nil && !o.set["saturation"] {
		saturation = 1 // a replica does one second of work per second: load is in busy replicas
	}
	m := sim.Model{Saturation: saturation, Target: o.occupancy, MinReplicas: o.floor, MaxReplicas: o.maxReplicas, InitialReplicas: o.initial}
	if queue != nil {
		series = queue.Series(m, o.turn)
	}
	cfg := sim.Config{Model: m, Delay: o.delay, StartupTurns: o.startup, Turn: o.turn}
	if o.compare {
		return runCompare(stdout, cfg, series, queue != nil, o)
	}
	setting, err := o.setting(m)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
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
	if queue != nil {
		fmt.Fprintf(&b, "queue: backlog turns %d, peak backlog %.0f items, mean wait %.1f s, max wait %.0f s\n",
			s.BacklogTurns, s.PeakBacklog, s.MeanWait, s.MaxWait)
	}
	_, err = stdout.Write(b.Bytes())
	return err
}

func parseSimulate(args []string) (simulateOptions, *flag.FlagSet, error) {
	m, hpa, kpa := sim.ReferenceModel(), sim.DefaultHPAOptions(), sim.DefaultKPAOptions()
	var o simulateOptions
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.trace, "trace", "reference", "trace: reference, jump, flash-crowd, slow-ramp, seed:N, family:NAME:N (NAME a family of the report, spaces as dashes), queue, queue:N, or a CSV file (one load per line, or turn,load; a queue trace: turn,arrivals,serviceSeconds)")
	fs.StringVar(&o.event, "event", "60:90", "event window START:END scored as the jump, for a CSV trace")
	fs.IntVar(&o.delay, "delay", 0, "metric delay in turns")
	fs.IntVar(&o.startup, "startup", 0, "turns a new replica takes to become ready")
	fs.DurationVar(&o.turn, "turn", sim.DefaultTurn, "wall-clock length of one turn (HPA and signal clocks)")
	fs.StringVar(&o.controller, "controller", "naive", strings.Join(controllers, ", "))
	fs.BoolVar(&o.table, "table", false, "print the metric-delay model's tables (docs/semantics.md): the delay scan 0..6 and the jump test")
	fs.BoolVar(&o.json, "json", false, "print the run as JSON (score and every turn)")
	fs.StringVar(&o.svgFile, "svg", "", "also draw load, required and supplied replicas to this SVG file")
	fs.StringVar(&o.report, "report", "", "regenerate the decision-quality report at this path (and its pictures beside it); takes no other flag")
	fs.Float64Var(&o.saturation, "saturation", m.Saturation, "requests/s one replica serves at saturation (a queue trace: 1, load in busy replicas)")
	fs.Float64Var(&o.occupancy, "occupancy", m.Target, "target occupancy per replica, in (0, 1]")
	fs.IntVar(&o.floor, "min-replicas", m.MinReplicas, "replica floor (also the policies' minReplicas)")
	fs.IntVar(&o.maxReplicas, "max-replicas", m.MaxReplicas, "replica ceiling (also the policies' maxReplicas)")
	fs.IntVar(&o.initial, "initial-replicas", m.InitialReplicas, "replicas before turn 0")
	fs.IntVar(&o.window, "window", 0, "naive: wait window, turns a scale-in must be wanted in a row")
	fs.IntVar(&o.step, "step-limit", 0, "naive: step limit, most replicas changed per turn (0: none)")
	fs.Var(stepFlag{&o.step, &o.prom.step, &o.stepIsLimit}, "step", "a whole number: --step-limit; a duration: the --from-prometheus range's resolution (default 15s), one turn per step")
	fs.Float64Var(&o.tolerance, "hpa-tolerance", hpa.Tolerance, "hpa: no change while |1 - metric/target| <= this")
	fs.DurationVar(&o.upWindow, "hpa-up-window", hpa.ScaleUp.StabilizationWindow, "hpa: scale-up stabilization window")
	fs.DurationVar(&o.downWindow, "hpa-down-window", hpa.ScaleDown.StabilizationWindow, "hpa: scale-down stabilization window")
	fs.DurationVar(&o.period, "hpa-period", 15*time.Second, "hpa: period of every policy")
	fs.IntVar(&o.upPercent, "hpa-up-percent", 100, "hpa: scale-up percent policy (0: none)")
	fs.IntVar(&o.upPods, "hpa-up-pods", 4, "hpa: scale-up pods policy (0: none)")
	fs.IntVar(&o.downPercent, "hpa-down-percent", 100, "hpa: scale-down percent policy")
	fs.DurationVar(&o.kpa.StableWindow, "kpa-stable-window", kpa.StableWindow, "kpa: stable window")
	fs.Float64Var(&o.kpa.PanicWindowPercent, "kpa-panic-percent", kpa.PanicWindowPercent, "kpa: panic window, percent of the stable window")
	fs.Float64Var(&o.kpa.PanicThreshold, "kpa-panic-threshold", kpa.PanicThreshold, "kpa: panic when the panic window asks for this many times the ready pods")
	fs.Float64Var(&o.kpa.MaxScaleUpRate, "kpa-max-up-rate", kpa.MaxScaleUpRate, "kpa: at most this many times the ready pods")
	fs.Float64Var(&o.kpa.MaxScaleDownRate, "kpa-max-down-rate", kpa.MaxScaleDownRate, "kpa: at least the ready pods over this")
	fs.Float64Var(&o.kedaTarget, "keda-target", 0, "barometer: KEDA targetValue, replicas = ceil(ScaleValue / it) (0: the occupancy target)")
	o.keys = defineKeyFlags(fs)
	fs.BoolVar(&o.compare, "compare", false, "run every controller and profile on the trace side by side: one table (and --svg draws them all)")
	definePromFlags(fs, &o.prom)
	fs.BoolVar(&o.wiring.CurrentReplicas, "current-replicas", false, "policies: see the replicas ready at the decision, not the sample's (the engine's)")
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
	if !slices.Contains(controllers, o.controller) {
		return fmt.Errorf("--controller %q (allowed: %s)", o.controller, strings.Join(controllers, ", "))
	}
	if o.compare && (o.set["controller"] || o.table || o.json) {
		return errors.New("--compare runs every controller (not with --controller, --table or --json)")
	}
	for _, name := range slices.Sorted(maps.Keys(flagControllers)) {
		cs := flagControllers[name]
		switch {
		case !o.set[name]:
		case o.compare && !compareFlags[name]:
			return fmt.Errorf("--%s does not apply to --compare (it runs the other controllers with their defaults)", name)
		case !o.compare && !slices.Contains(cs, o.controller):
			return fmt.Errorf("--%s applies to --controller %s (this run: %s)", name, strings.Join(cs, ", "), o.controller)
		}
	}
	if err := o.keys.check(o.set, o.controller, o.compare); err != nil {
		return err
	}
	for _, name := range o.keys.flags() {
		if info := o.keys.keys[name]; o.compare && o.set[name] && (info.Name == "profile" || !slices.Contains(info.Policies, signal.PolicyPressure) && info.Name != "launchTTL") {
			return fmt.Errorf("--%s does not apply to --compare (it runs the other controllers with their defaults)", name)
		}
	}
	if err := o.prom.validate(o.set); err != nil {
		return err
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
		{o.floor < 1, "min-replicas", "a whole number >= 1"},
		{o.maxReplicas < o.floor, "max-replicas", "a whole number >= --min-replicas"},
		{o.initial < o.floor || o.initial > o.maxReplicas, "initial-replicas", "--min-replicas..--max-replicas"},
		{o.window < 0, "window", "a whole number >= 0"},
		{o.step < 0, "step-limit", "a whole number >= 0"},
		{o.set["step"] && o.stepIsLimit && o.controller != "naive", "step", "a duration with --from-prometheus; a whole number (the step limit) with --controller naive only"},
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
	for _, c := range checks {
		if c.bad {
			return fmt.Errorf("--%s (allowed: %s)", c.flag, c.want)
		}
	}
	if _, _, err := parseEvent(o.event); err != nil {
		return fmt.Errorf("--event %q (allowed: START:END, 0 <= START <= END)", o.event)
	}
	if o.controller == "barometer" || o.compare {
		if _, err := o.signalOptions(""); err != nil {
			return err
		}
	}
	return nil
}

// signalOptions are the barometer controller's signal options: the
// profile's (profile, or the --profile flag's when ""), with the signal
// flags applied, parsed as a trigger's. The floor and the surge's target
// are the model's (sim.BarometerOptions), not a trigger's.
func (o simulateOptions) signalOptions(profile string) (signal.Options, error) {
	var extra map[string]string
	if profile != "" {
		extra = map[string]string{"profile": profile}
	}
	t, err := o.keys.trigger(signal.PolicyPressure, extra)
	if err != nil {
		return signal.Options{}, err
	}
	so := t.Signal
	so.SurgeTarget, so.FloorTarget = 0, 0
	return so, nil
}

// optionFlags names the flag that sets each pkg/policy option field, so an
// *policy.OptionError is reported against the flag the user wrote.
var optionFlags = map[string]string{
	"EwmaAlpha": "ewma-alpha", "DefaultServiceTime": "default-service-time", "TargetUtilization": "target-utilization",
	"RateCutoff": "rate-cutoff", "DrainTime": "drain-time", "MaxStepUpRatio": "max-step-up-ratio", "MaxStepUpAbs": "max-step-up",
	"StabilizationWindow": "stabilization-window", "MaxStepDown": "max-step-down", "ScaleDownCooldown": "scale-down-cooldown",
	"MinReplicas": "min-replicas", "MaxReplicas": "max-replicas", "Min": "min-replicas", "Max": "max-replicas",
	"High": "threshold", "Low": "threshold-low", "Ticks": "ticks", "TTL": "launch-ttl",
}

// policySetting builds a pkg/policy controller from the flags, read at m:
// the documented defaults, the bounds of the model, targetUtilization at
// the occupancy unless set.
func (o simulateOptions) policySetting(m sim.Model) (sim.Setting, error) {
	var s sim.Setting
	t, err := o.keys.trigger(o.controller, nil)
	if err != nil {
		return s, err
	}
	w := o.wiring
	w.Launch.TTL = t.Policy.LaunchTTL
	if o.controller == policy.PolicyQueue {
		q := t.Policy.Queue
		if !o.set["target-utilization"] {
			q.TargetUtilization = m.Target
		}
		base := policies.QueueOptions(m)
		q.ReservationHorizon, q.MinReplicas, q.MaxReplicas = base.ReservationHorizon, base.MinReplicas, base.MaxReplicas
		s, err = policies.QueueSetting(o.controller, q, w)
	} else {
		e := policies.ElasticityOptions(o.controller, m)
		e.High, e.Low, e.Ticks = t.Policy.Elasticity.High, t.Policy.Elasticity.Low, t.Policy.Elasticity.Ticks
		s, err = policies.ElasticitySetting(o.controller, e, w)
	}
	var oe *policy.OptionError
	if errors.As(err, &oe) {
		return s, fmt.Errorf("--%s %s (allowed: %s)", optionFlags[oe.Field], oe.Value, oe.Allowed)
	}
	return s, err
}

// setting builds the chosen controller with its flags.
func (o simulateOptions) setting(m sim.Model) (sim.Setting, error) {
	if slices.Contains(replicaPolicies, o.controller) {
		return o.policySetting(m)
	}
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
		return sim.HPASetting("HPA", h), nil
	case "kpa":
		return sim.KPASetting("KPA", o.kpa), nil
	case "barometer":
		so, err := o.signalOptions("")
		if err != nil {
			return sim.Setting{}, err
		}
		profile := signal.DefaultProfile
		if v, ok := o.keys.values["profile"]; ok {
			profile = v
		}
		return sim.BarometerSetting("Barometer "+profile, sim.BarometerOptions{Signal: so, Target: o.kedaTarget}), nil
	}
	return sim.NaiveSetting(naiveName(o.window, o.step), sim.NaiveOptions{Window: o.window, Step: o.step}), nil
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

// loadTrace reads --trace: a load series, or a queue trace (returned
// second, to be made a series once the model is known).
func loadTrace(o simulateOptions) (sim.Series, *sim.QueueTrace, error) {
	var (
		s sim.Series
		q *sim.QueueTrace
	)
	seed := func(prefix string) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimPrefix(o.trace, prefix), 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q (allowed: %sN with N a whole number > 0)", o.trace, prefix)
		}
		return n, nil
	}
	switch name := o.trace; {
	case name == "reference":
		s = sim.Reference()
	case name == "jump":
		s = sim.JumpTest()
	case name == "flash-crowd":
		s = sim.FlashCrowd(7)
	case name == "slow-ramp":
		s = sim.SlowRamp(11)
	case name == "queue":
		t := sim.ReferenceQueue()
		q = &t
	case strings.HasPrefix(name, "family:"):
		f, err := familyTrace(name)
		if err != nil {
			return s, nil, err
		}
		s = f
	case strings.HasPrefix(name, "seed:"):
		n, err := seed("seed:")
		if err != nil {
			return s, nil, err
		}
		s = sim.Seeded(n)
	case strings.HasPrefix(name, "queue:"):
		n, err := seed("queue:")
		if err != nil {
			return s, nil, err
		}
		t := sim.GeneratedQueue(n)
		q = &t
	default:
		data, err := os.ReadFile(name)
		if err != nil {
			return s, nil, fmt.Errorf("%w (allowed: reference, jump, flash-crowd, slow-ramp, seed:N, queue, queue:N, or a CSV file)", err)
		}
		start, end, _ := parseEvent(o.event)
		if sim.IsQueueCSV(data) {
			t, err := sim.ReadQueueCSV(bytes.NewReader(data), filepath.Base(name))
			t.EventStart, t.EventEnd = start, end
			return s, &t, err
		}
		s, err = sim.ReadCSV(bytes.NewReader(data), filepath.Base(name))
		s.EventStart, s.EventEnd = start, end
		return s, nil, err
	}
	if o.set["event"] {
		start, end, _ := parseEvent(o.event)
		s.EventStart, s.EventEnd = start, end
		if q != nil {
			q.EventStart, q.EventEnd = start, end
		}
	}
	return s, q, nil
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

// writeTables prints the model's table layout: the delay scan and the jump
// test.
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
	jump := cfg
	jump.Model.Saturation = o.saturation // the jump test is request traffic, even beside a queue trace
	for _, r := range sim.Scan(jump, sim.JumpTest(), set, jumpDelays) {
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

// writeReport regenerates the report and its pictures beside it.
func writeReport(path string) error {
	files, err := report.Generate(filepath.Base(path))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), f.Name), f.Data, 0o644); err != nil {
			return fmt.Errorf("simulate: --report: %w", err)
		}
	}
	return nil
}

// familyTrace reads family:NAME:N, NAME a family's name with its spaces
// as dashes.
func familyTrace(v string) (sim.Series, error) {
	rest := strings.TrimPrefix(v, "family:")
	name, seedText, ok := strings.Cut(rest, ":")
	seed, err := strconv.ParseInt(seedText, 10, 64)
	var names []string
	for _, f := range sim.Families() {
		flagName := strings.ReplaceAll(f.Name, " ", "-")
		names = append(names, flagName)
		if ok && err == nil && seed > 0 && flagName == name {
			return f.Series(seed), nil
		}
	}
	return sim.Series{}, fmt.Errorf("%q (allowed: family:NAME:N with NAME one of %s and N a whole number > 0)", v, strings.Join(names, ", "))
}
