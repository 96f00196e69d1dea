package command

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/backtest"
	"github.com/barometer-scaler/barometer/pkg/sim/control"
	"github.com/barometer-scaler/barometer/pkg/sim/policies"
)

// The controllers the simulator builds itself; the replica policies are
// pkg/policy's.
const (
	controllerNaive     = "naive"
	controllerHPA       = "hpa"
	controllerKPA       = "kpa"
	controllerBarometer = "barometer"
	controllerMaxHold   = "maxhold"
)

// controllers are the --controller values, in the order the help lists them.
var controllers = append([]string{controllerNaive, controllerHPA, controllerKPA, controllerMaxHold, controllerBarometer}, policy.Names()...)

// simulateOptions are the parsed flags.
type simulateOptions struct {
	trace, event, controller, svgFile, report          string
	delay, startup, window, step, maxReplicas, initial int
	upPercent, upPods, downPercent                     int
	turn, upWindow, downWindow, period                 time.Duration
	saturation, occupancy, tolerance, kedaTarget       float64
	table, json, compare, stepIsLimit                  bool
	rawSignal, hpaDefaultBehavior, workingSet          bool
	set                                                map[string]bool
	floor                                              int
	wiring                                             policies.Wiring
	kpa                                                control.KPAOptions
	keys                                               *keyFlags
	prom                                               backtest.Flags
	// history is a backtest's history from Prometheus, for the seasonal
	// forecast; nil for a trace.
	history *backtest.History
}

func parseSimulate(args []string) (*simulateOptions, *flag.FlagSet, error) {
	o := &simulateOptions{}
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.defineRunFlags(fs)
	o.defineAnchorFlags(fs)
	o.keys = defineKeyFlags(fs)
	fs.BoolVar(&o.compare, "compare", false, "run every controller and profile on the trace side by side: one table (and --svg draws them all)")
	o.prom.Define(fs)
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

// defineRunFlags are the flags of the run itself: the trace, the model,
// the controller and what to print.
func (o *simulateOptions) defineRunFlags(fs *flag.FlagSet) {
	m := sim.ReferenceModel()
	fs.StringVar(&o.trace, "trace", "reference", "trace: reference, jump, flash-crowd, slow-ramp, seed:N, family:NAME:N (NAME a family of the report, spaces as dashes), queue, queue:N, or a CSV file (one load per line, or turn,load; a queue trace: turn,arrivals,serviceSeconds)")
	fs.StringVar(&o.event, "event", "60:90", "event window START:END scored as the jump, for a CSV trace")
	fs.IntVar(&o.delay, "delay", 0, "metric delay in turns")
	fs.IntVar(&o.startup, "startup", 0, "turns a new replica takes to become ready")
	fs.DurationVar(&o.turn, "turn", sim.DefaultTurn, "wall-clock length of one turn (HPA and signal clocks)")
	fs.StringVar(&o.controller, "controller", controllerNaive, strings.Join(controllers, ", "))
	fs.BoolVar(&o.table, "table", false, "print the metric-delay model's tables (docs/semantics.md): the delay scan 0..6 and the jump test")
	fs.BoolVar(&o.json, "json", false, "print the run as JSON (score and every turn)")
	fs.StringVar(&o.svgFile, "svg", "", "also draw load, required and supplied replicas to this SVG file")
	fs.StringVar(&o.report, "report", "", "regenerate the decision-quality report at this path (and its pictures beside it); takes no other flag")
	fs.Float64Var(&o.saturation, "saturation", m.Saturation, "requests/s one replica serves at saturation (a queue trace: 1, load in busy replicas)")
	fs.Float64Var(&o.occupancy, "occupancy", m.Target, "target occupancy per replica, in (0, 1]")
	fs.IntVar(&o.floor, "min-replicas", m.MinReplicas, "replica floor (also the policies' minReplicas)")
	fs.IntVar(&o.maxReplicas, "max-replicas", m.MaxReplicas, "replica ceiling (also the policies' maxReplicas)")
	fs.IntVar(&o.initial, "initial-replicas", m.InitialReplicas, "replicas before turn 0")
}

// defineAnchorFlags are the options of the controllers Barometer is
// measured against (naive, HPA, KPA) and of Barometer's KEDA read.
func (o *simulateOptions) defineAnchorFlags(fs *flag.FlagSet) {
	hpa, kpa := control.DefaultHPAOptions(), control.DefaultKPAOptions()
	fs.IntVar(&o.window, "window", 0, "naive: wait window, turns a scale-in must be wanted in a row")
	fs.IntVar(&o.step, "step-limit", 0, "naive: step limit, most replicas changed per turn (0: none)")
	fs.Var(stepFlag{&o.step, &o.prom.Step, &o.stepIsLimit}, "step", "a whole number: --step-limit; a duration: the --from-prometheus range's resolution (default 15s), one turn per step")
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
	fs.BoolVar(&o.rawSignal, "raw-signal", false, "barometer: score the raw signal, ceil(ScaleValue / target) with no HPA (default: as deployed, through KEDA's milli quantity and the HPA with the README's recommended behavior, scaleDown stabilizationWindowSeconds 0)")
	fs.BoolVar(&o.workingSet, "working-set", false, "barometer: the replicas also report their working set (their share of the work in flight, not capped at saturation, as barometer_activations is), which the saturation surge reads (default: utilisation alone, capped at 1)")
	fs.BoolVar(&o.hpaDefaultBehavior, "hpa-default-behavior", false, "barometer: score as deployed with the HPA's Kubernetes default behavior (a 300 s scale-down window) instead of the README's recommended one")
}

// deployment is how the flags say Barometer is scored.
func (o *simulateOptions) deployment() control.Deployment {
	switch {
	case o.rawSignal:
		return control.RawSignal
	case o.hpaDefaultBehavior:
		return control.DeployedDefault
	}
	return control.DeployedRecommended
}
