// Package report writes the decision-quality report (docs/decision-quality.md)
// and its pictures from simulator runs: the controllers of pkg/sim/control
// and the replica policies of pkg/policy (through pkg/sim/policies), on the
// reference series, the jump test, other generated series and a queue
// trace. Everything is deterministic, so a test can tell a stale report.
package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/control"
)

// Command regenerates the decision-quality report.
const Command = "go run ./cmd/scaler simulate --report docs/decision-quality.md"

// reportDelays are the metric delays every report table scans.
var reportDelays = []int{0, 1, 2, 3, 4, 5, 6}

// goalDelay is the delay the report's goals are set at.
const goalDelay = 3

// Positions in settings() that the report's notes refer to.
const (
	reportNaive      = 0
	reportWindowStep = 1
	reportHPA        = 2
	reportKPA        = 3
	reportMaxHold    = 4
	reportOriginal   = 5
	reportResponsive = 6
	reportDefault    = 7
)

// anchors are the positions of the controllers the default profile is
// measured against, the tuned baseline included.
var anchors = []int{reportNaive, reportWindowStep, reportHPA, reportKPA, reportMaxHold}

// settings are the pkg/sim/control controllers the report compares, in its order:
// the anchors, the tuned baseline last among them, then one Barometer row
// per profile of pkg/signal scored as deployed with the recommended
// behavior, the default profile last.
func settings() []sim.Setting {
	sets := []sim.Setting{
		control.NaiveSetting("naive", control.NaiveOptions{}),
		control.NaiveSetting("naive, window 3 + step 1", control.NaiveOptions{Window: 3, Step: 1}),
		control.HPASetting("HPA, default behavior", control.DefaultHPAOptions()),
		control.KPASetting("KPA, Knative defaults", control.DefaultKPAOptions()),
		control.TunedMaxHoldSetting("maxhold, tuned", control.DefaultMaxHoldGrid()),
	}
	for _, p := range []string{signal.ProfileOriginal, signal.ProfileResponsive, signal.DefaultProfile} {
		sets = append(sets, barometer(p, control.DeployedRecommended))
	}
	return sets
}

// barometer is a profile's setting, scored as d says.
func barometer(profile string, d control.Deployment) sim.Setting {
	o, err := control.ProfileBarometerOptions(profile)
	if err != nil {
		panic(err) // the profiles named here exist
	}
	return control.BarometerSetting(profileName(profile), o, d)
}

// profileName is a profile's row name, before its deployment's.
func profileName(p string) string {
	if p == signal.DefaultProfile {
		return "Barometer, profile " + p + " (default)"
	}
	return "Barometer, profile " + p
}

// File is one generated file, named relative to the report's directory.
type File struct {
	Name string
	Data []byte
}

// Pictures names the pictures beside a report named base: the reference
// series' delay-3 run and the queue trace's.
func Pictures(base string) (reference, queue string) {
	stem := strings.TrimSuffix(base, ".md")
	return stem + "-delay3.svg", stem + "-queue-delay3.svg"
}

// Generate writes the report named base (a file name such as
// "decision-quality.md") and its pictures, report first.
func Generate(base string) ([]File, error) {
	refPic, queuePic := Pictures(base)
	m, cfg, sets := sim.ReferenceModel(), sim.Config{Model: sim.ReferenceModel()}, settings()
	ref := sim.Reference()
	// The real traces and the families are most of the work: they run
	// side by side, each trace and each family in its own goroutine.
	var (
		reals   []realRuns
		realErr error
		wg      sync.WaitGroup
	)
	wg.Go(func() { reals, realErr = scoreRealTraces(sim.RealTraces(), realSettings()) })
	fams := scoreFamilies(cfg, sets)
	// [start-up][setting][delay] on the reference series
	startups := make([][][]sim.Result, len(reportStartups))
	for u, up := range reportStartups {
		wg.Go(func() {
			c := cfg
			c.StartupTurns = up
			for _, s := range sets {
				startups[u] = append(startups[u], sim.Scan(c, ref, s, reportDelays))
			}
		})
	}
	wg.Wait()
	if realErr != nil {
		return nil, realErr
	}
	results := startups[0]

	var b strings.Builder
	fmt.Fprintf(&b, "# Decision quality: controllers under metric delay\n\n")
	fmt.Fprintf(&b, "Generated; do not edit by hand. Regenerate this file, `%s` and `%s` with:\n\n    %s\n\n", refPic, queuePic, Command)
	fmt.Fprintf(&b, "A test (`TestReportIsCurrent` in `pkg/sim/command`) fails when this file is stale.\n\n")
	writeIntro(&b, m, ref)

	fmt.Fprintf(&b, "## The goals (the default profile, %s, scored as deployed)\n\n", signal.DefaultProfile)
	writeGoals(&b, sets, reals, fams)
	writeFrontiers(&b, reals, fams)
	writeRealAdvance(&b, reals)
	writeJumpGoal(&b, sim.Scan(cfg, sim.JumpTest(), sets[reportDefault], []int{goalDelay})[0].Score)
	writeRealTraces(&b, realSettings(), reals)

	fmt.Fprintf(&b, "## The reference series, delays 0..6\n\n")
	fmt.Fprintf(&b, "Reaction is counted on this series' own jump (turn 60). Demand for the SPEC metrics is the required replicas, supply the ready replicas; jitter is per minute at %s per turn. Each setting runs with new replicas serving at once, then with a start-up of 1 and 2 turns.\n\n", sim.DefaultTurn)
	for i, s := range sets {
		fmt.Fprintf(&b, "### %s\n\n", s.Name)
		for u, up := range reportStartups {
			fmt.Fprintf(&b, "%s:\n\n", capitalize(startupName(up)))
			writeScoreTable(&b, startups[u][i])
		}
	}

	fmt.Fprintf(&b, "## Jump test: reaction turns\n\n800 requests/s for 60 turns, then 3200 (required 1 -> 4); turns until the ready replicas first meet the requirement, at each start-up (in turns).\n\n")
	fmt.Fprintf(&b, "| setting | start-up |%s\n|---|---:|%s\n", delayHeader(), strings.Repeat("---:|", len(reportDelays)))
	for _, s := range sets {
		for _, up := range reportStartups {
			c := cfg
			c.StartupTurns = up
			fmt.Fprintf(&b, "| %s | %d |", s.Name, up)
			for _, r := range sim.Scan(c, sim.JumpTest(), s, reportDelays) {
				fmt.Fprintf(&b, " %d |", r.Score.Reaction)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")

	writeFamilies(&b, sets, fams)
	writeNotes(&b, cfg, results)

	fmt.Fprintf(&b, "## The delay-%d run\n\n![load, required and supplied replicas at delay %d](%s)\n\n", goalDelay, goalDelay, refPic)
	writePolicies(&b)
	queueRuns := writeQueueTrace(&b, sets)
	fmt.Fprintf(&b, "## The queue trace's delay-%d run\n\n![queue trace: load, required and supplied replicas at delay %d](%s)\n", goalDelay, goalDelay, queuePic)

	var runs []sim.Named
	for i, s := range sets {
		runs = append(runs, sim.Named{Name: s.Name + ": " + scoreLine(results[i][goalDelay].Score), Result: results[i][goalDelay]})
	}
	var refSVG, queueSVG bytes.Buffer
	if err := sim.Chart(m, fmt.Sprintf("Reference series at metric delay %d: load, required and supplied replicas", goalDelay), runs).Write(&refSVG); err != nil {
		return nil, err
	}
	if err := queueChart(queueRuns).Write(&queueSVG); err != nil {
		return nil, err
	}
	return []File{{base, []byte(b.String())}, {refPic, refSVG.Bytes()}, {queuePic, queueSVG.Bytes()}}, nil
}

func scoreLine(o sim.Score) string {
	return fmt.Sprintf("total %d replica-turns, shortfall %d turns, oscillation %d", o.Total, o.Shortfall, o.Oscillation)
}

func writeIntro(b *strings.Builder, m sim.Model, s sim.Series) {
	g, rec := control.DefaultMaxHoldGrid(), control.RecommendedHPAOptions()
	fmt.Fprintf(b, `The model is the metric-delay model (docs/semantics.md, "Metric delay"): %d turns of load, the reference series (%s), %s requests/s per replica, target occupancy %s %%, %d..%d replicas starting at %d; the ideal total is %d replica-turns. New replicas serve at once, and every table runs again with a start-up of 1 and 2 turns (a replica asked for serves only that many turns later; Barometer's signal knows the start-up, as a k8s:// target's sampler measures it). A turn is %s for the clocks of the HPA and the signal. The real traces (below) run with their own turn and model.

The settings:

- **naive**: the model's naive rule, current replicas x delayed occupancy / target; **window 3 + step 1** adds its two dampers.
- **HPA, default behavior**: the HorizontalPodAutoscaler's algorithm on the same occupancy metric: tolerance 0.1; scale-up 100 %% or 4 pods per 15 s (select Max); scale-down 100 %% per 15 s after a 300 s stabilization window.
- **KPA, Knative defaults**: Knative's pod autoscaler (docs/kpa.md): the total demand (occupancy x the replicas it was measured across, uncapped) averaged over a 60 s stable window (4 turns) and a 6 s panic window (the newest sample), target %[11]s per pod; panic when the panic window asks for 2 x the ready pods, holding its high-water mark until a stable window has passed without; each decision within [floor(ready / 2), ceil(1000 x ready)]; it starts in panic on more than one pod.
- **maxhold, tuned**: the tuned baseline (`+"`scaler simulate --controller maxhold`"+`): the largest demand (uncapped, in replicas at the target) among the last W delivered samples, a scale-in held until h samples in a row ask for less, a scale-out never held. W and h are tuned for each series and each delay over W %[12]d..%[13]d and h %[14]d..%[15]d: the fewest total replica-turns among the settings short in at most %[16]s %% of the turns (the fewest shortfall turns when none is). It knows the series it is scored on; no setting a user deploys does.
- **Barometer, profile NAME, deployed, recommended behavior**: the real pkg/signal computer with that profile's options (signal.ProfileOptions), fed through the real pkg/pressure collector (each replica reports the occupancy as CPU utilisation, which the collector caps at 1; the data is measured at the sample's turn, so the signal knows its age), scored as a ScaledObject deploys it: KEDA hands the value to the HPA as a milli-precision quantity (truncated to thousandths), and the HPA's algorithm for an External metric with an AverageValue target of %[10]s asks for ceil(value / target), applied only when value / (target x current replicas) is outside the tolerance 0.1, then its behavior: the one the README's ScaledObject examples recommend, the Kubernetes default with the scale-down stabilization window at %[17]s s (the signal's own churn budget holds a scale-in; the HPA's 300 s window on top would hold every one 5 minutes more). `+"`scaler simulate --controller barometer`"+` scores this by default; `+"`--hpa-default-behavior`"+` scores Kubernetes' default behavior and `+"`--raw-signal`"+` the signal alone, ceil(value / target) with no HPA (the real traces' last row). The surge asks for replicas at that target.
  **original** is the signal as it was: slow release (EWMA 30 s, a 2-minute gate, scale-in blocked while any dimension is at or above 0.25), no compensation. **responsive** follows demand (only a saturated dimension blocks scale-in, no gate window, no EWMA) and compensates the lag (docs/compensation.md): a lead of the Theil-Sen slope of the last 7 raw demands times the sample's age, only when the rise is significant (a Mann-Kendall z of at least 2), never negative; on stale samples a scale-in margin of 5 %% or 2.5 widths of the demand's noise, whichever is more; and the saturation surge (a capped sample across n replicas asks for 2n, n + 4 when stale and more; a larger pool still saturated multiplies that factor by the pool's growth; held while the samples stay saturated, ended by one under 90 %% of saturation). **budgeted**, the default, is responsive provisioning to two budgets (docs/compensation.md, "The budgets"): a shortfall budget of %[18]s %% of the samples, met by headroom above the demand's level fed back from the samples that saw the pool short, and a churn budget that prices a change at %[22]s replica-seconds (rent-or-buy: a surplus of S replicas is kept %[22]s / S seconds beyond a replica's start-up, twice that where the latest drops were undone, half where they lasted) and keeps none longer than %[19]s minutes; its seasonal forecast is on (it finds no season in series of 30 minutes, the generated ones; docs/compensation.md, "The seasonal forecast").

Besides the reference series, every controller runs on %[20]d seeds of each of %[21]d generated families and on seven real traces (below). The replica policies of pkg/policy (queue, fully_elastic, max_count, pool_with_threshold, fixed) have their own sections after the delay-3 run, and every controller runs on a queue trace at the end.

`, len(s.Load), s.Name, num(m.Saturation), num(m.Target*100), m.MinReplicas, m.MaxReplicas, m.InitialReplicas, m.Ideal(s.Load), sim.DefaultTurn, num(m.Target), num(m.Target),
		g.Windows[0], g.Windows[len(g.Windows)-1], g.Holds[0], g.Holds[len(g.Holds)-1], num(100*g.ShortfallBudget),
		num(rec.ScaleDown.StabilizationWindow.Seconds()), num(100*signal.DefaultShortfallBudget), num(signal.DefaultScaleInHold.Minutes()), sim.FamilySeeds, len(sim.Families()), num(signal.DefaultChangeCost))
}

func writeJumpGoal(b *strings.Builder, jump sim.Score) {
	fmt.Fprintf(b, "### The jump test\n\nThe goal: the ready replicas meet the jump's requirement (below) at most %d turns after it, at delay %d. The default profile, as deployed: %d turns, %s.\n\n",
		goalDelay, goalDelay, jump.Reaction, mark(jump.Reaction >= 0 && jump.Reaction <= goalDelay))
}

func mark(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// writeNotes states what the tables show; results are the reference
// series' runs, [setting][delay].
func writeNotes(b *strings.Builder, cfg sim.Config, results [][]sim.Result) {
	naive, orig := results[reportNaive][1:], results[reportOriginal]
	sets, ideal := settings(), cfg.Model.Ideal(sim.Reference().Load)
	jump := func(i int) int {
		return sim.Run(withDelay(cfg, goalDelay), sim.JumpTest(), sets[i].Controller(withDelay(cfg, goalDelay), sim.JumpTest())).Score.Reaction
	}
	fmt.Fprintf(b, "## What the tables show\n\n")
	fmt.Fprintf(b, "- The naive rule multiplies a stale occupancy by the current count: at delays 1..6 it spends %s replica-turns (ideal %d). Barometer measures demand across the replicas the pressure was measured across, so it has no such over-correction; the original profile's slow release then holds %s replica-turns at every delay.\n",
		totalRange(naive), ideal, totalRange(orig))
	fmt.Fprintf(b, "- The collector caps each replica's pressure at 1, so one sample can raise KEDA's count by at most 1 / target (x%.2f): the original profile needs %d turns for the jump test at delay %d. The saturation surge asks for 2n (n + 4 when stale) at once, and more while a grown pool stays saturated: the responsive and budgeted profiles react in %d and %d.\n",
		1/cfg.Model.Target, jump(reportOriginal), goalDelay, jump(reportResponsive), jump(reportDefault))
	r0, d0, d3, r3 := results[reportResponsive][0].Score, results[reportDefault][0].Score, results[reportDefault][goalDelay].Score, results[reportResponsive][goalDelay].Score
	fmt.Fprintf(b, "- The budgeted profile provisions for a shortfall budget, not for the exact requirement: on the reference series it spends %d replica-turns at delay 0 and %d at delay %d (short in %d turns), where responsive, which has no budget, spends %d and %d (short in %d). The headroom is fed back from the samples that saw the pool short, so it is sized by the demand's noise over the lag, which on this series is large against its 1..5 replicas.\n",
		d0.Total, d3.Total, goalDelay, d3.Shortfall, r0.Total, r3.Total, r3.Shortfall)
	k := results[reportKPA][goalDelay].Score
	fmt.Fprintf(b, "- The KPA reads a total, so like Barometer it has no over-correction, and its 60 s average damps noise; it has no lead and its panic mode needs the newest sample to ask for twice the ready pods, so at delay %d it is short in %d turns of the reference series (total %d).\n", goalDelay, k.Shortfall, k.Total)
	fmt.Fprintf(b, "- The HPA on the occupancy reads the same stale occupancy times its current ready pods, the naive rule's trap; its 300 s scale-down window then holds the over-shoot, which is why it spends the most. Barometer's rows go through the same HPA algorithm, but on an AverageValue target: the HPA divides the value, a total, by the target, so it inherits none of the trap; with the recommended behavior it adds its tolerance (no change within 10 %%) and its scale-up rate limit, and holds nothing on a scale-in.\n")
	t := control.TuneMaxHold(withDelay(cfg, goalDelay), sim.Reference(), control.DefaultMaxHoldGrid())
	within := "within its budget of 3 % of the turns (3 of 120), the cheapest"
	if !t.WithinBudget {
		within = "no setting of the grid is short in at most 3 % of the turns (3 of 120), so the pick is the least short"
	}
	fmt.Fprintf(b, "- The tuned baseline knows the series it is scored on: on the reference series at delay %d its grid picks W=%d h=%d (total %d, short in %d turns, reversals %d): %s. A family's median is of %d picks, one per seed.\n",
		goalDelay, t.Options.Window, t.Options.Hold, t.Score.Total, t.Score.Shortfall, t.Score.Oscillation, within, sim.FamilySeeds)
	fmt.Fprintf(b, "- The default profile's shortfall budget, %s %%, was chosen on these real traces: of 2 %%, 2.5 %% and 3 %%, the largest that kept every one within 3 %% of its turns short at delay %d; its churn budget's longest hold is the HPA's default scale-down window, %s minutes, and its price of a change the one that keeps a one-replica surplus that long even where drops last (%s replica-seconds); nothing else was tuned to this report (docs/compensation.md, \"The budgets\", \"The churn budget\"). Every option is an option of pkg/signal, so the rows above are what a ScaledObject runs. Where a goal above is NOT met, docs/compensation.md (\"What it does not reach\") says why.\n\n", num(100*signal.DefaultShortfallBudget), goalDelay, num(signal.DefaultScaleInHold.Minutes()), num(signal.DefaultChangeCost))
}

func withDelay(cfg sim.Config, d int) sim.Config {
	cfg.Delay = d
	return cfg
}

// totalRange is "lo..hi" of the runs' total replica-turns.
func totalRange(rs []sim.Result) string {
	lo, hi := rs[0].Score.Total, rs[0].Score.Total
	for _, r := range rs {
		lo, hi = min(lo, r.Score.Total), max(hi, r.Score.Total)
	}
	return fmt.Sprintf("%d..%d", lo, hi)
}

func delayHeader() string {
	var b strings.Builder
	for _, d := range reportDelays {
		fmt.Fprintf(&b, " delay %d |", d)
	}
	return b.String()
}

func writeScoreTable(b *strings.Builder, rs []sim.Result) {
	b.WriteString("| delay | changes | oscillation | excess | shortfall | shortfall in jump | total | peak | reaction | θU % | θO % | τU % | τO % | υ % | jitter /min |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range rs {
		o := r.Score
		fmt.Fprintf(b, "| %d | %d | %d | %d | %d | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f |\n",
			reportDelays[i], o.Changes, o.Oscillation, o.Excess, o.Shortfall, o.JumpShortfall, o.Total, o.Peak, o.Reaction,
			o.UnderAccuracy, o.OverAccuracy, o.UnderTimeshare, o.OverTimeshare, o.Instability, o.Jitter)
	}
	b.WriteString("\n")
}

// num prints a number the way JavaScript's String does for these values.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
