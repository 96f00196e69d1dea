// Package report writes the decision-quality report (docs/decision-quality.md)
// and its pictures from simulator runs: the controllers of pkg/sim and the
// replica policies of pkg/policy (through pkg/sim/policies), on the
// reference series, the jump test, other generated series and a queue
// trace. Everything is deterministic, so a test can tell a stale report.
package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/sim"
)

// Command regenerates the decision-quality report.
const Command = "go run ./cmd/scaler simulate --report docs/decision-quality.md"

// reportDelays are the metric delays every report table scans.
var reportDelays = []int{0, 1, 2, 3, 4, 5, 6}

// goalDelay is the delay the goal is set at.
const goalDelay = 3

// Positions in settings() that the report's notes refer to.
const (
	reportNaive      = 0
	reportWindowStep = 1
	reportKPA        = 3
	reportOriginal   = 4
	reportDefault    = 5
)

// anchors are the positions of the controllers the default profile is
// measured against.
var anchors = []int{0, 1, 2, 3}

// settings are the pkg/sim controllers the report compares, in its order:
// the anchors, then one Barometer row per profile of pkg/signal, the
// default profile last.
func settings() []sim.Setting {
	sets := []sim.Setting{
		sim.NaiveSetting("naive", sim.NaiveOptions{}),
		sim.NaiveSetting("naive, window 3 + step 1", sim.NaiveOptions{Window: 3, Step: 1}),
		sim.HPASetting("HPA, default behavior", sim.DefaultHPAOptions()),
		sim.KPASetting("KPA, Knative defaults", sim.DefaultKPAOptions()),
	}
	for _, p := range []string{signal.ProfileOriginal, signal.DefaultProfile} {
		o, err := sim.ProfileBarometerOptions(p)
		if err != nil {
			panic(err) // the profiles named here exist
		}
		sets = append(sets, sim.BarometerSetting(profileName(p), o))
	}
	return sets
}

// profileName is a profile's row name.
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
	var b strings.Builder
	fmt.Fprintf(&b, "# Decision quality: controllers under metric delay\n\n")
	fmt.Fprintf(&b, "Generated; do not edit by hand. Regenerate this file, `%s` and `%s` with:\n\n    %s\n\n", refPic, queuePic, Command)
	fmt.Fprintf(&b, "A test (`TestReportIsCurrent` in `cmd/scaler`) fails when this file is stale.\n\n")
	writeIntro(&b, m, ref)

	results := make([][]sim.Result, len(sets)) // [setting][delay] on the reference series
	for i, s := range sets {
		results[i] = sim.Scan(cfg, ref, s, reportDelays)
	}
	fams := scoreFamilies(cfg, sets)
	writeGoal(&b, results[reportNaive], results[reportDefault], sim.Scan(cfg, sim.JumpTest(), sets[reportDefault], []int{goalDelay})[0].Score)
	writeFamilyGoal(&b, sets, fams)

	fmt.Fprintf(&b, "## The reference series, delays 0..6\n\n")
	fmt.Fprintf(&b, "Reaction is counted on this series' own jump (turn 60). Demand for the SPEC metrics is the required replicas, supply the ready replicas; jitter is per minute at %s per turn.\n\n", sim.DefaultTurn)
	for i, s := range sets {
		fmt.Fprintf(&b, "### %s\n\n", s.Name)
		writeScoreTable(&b, results[i])
	}

	fmt.Fprintf(&b, "## Jump test: reaction turns\n\n800 requests/s for 60 turns, then 3200 (required 1 -> 4); turns until the ready replicas first meet the requirement.\n\n")
	fmt.Fprintf(&b, "| setting |%s\n|---|%s\n", delayHeader(), strings.Repeat("---:|", len(reportDelays)))
	for _, s := range sets {
		fmt.Fprintf(&b, "| %s |", s.Name)
		for _, r := range sim.Scan(cfg, sim.JumpTest(), s, reportDelays) {
			fmt.Fprintf(&b, " %d |", r.Score.Reaction)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")

	writeFamilies(&b, sets, fams)
	writeNotes(&b, cfg, results, fams)

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
	fmt.Fprintf(b, `The model is the metric-delay model (docs/semantics.md, "Metric delay"): %d turns of load, the reference series (%s), %s requests/s per replica, target occupancy %s %%, %d..%d replicas starting at %d; the ideal total is %d replica-turns. New replicas serve at once. A turn is %s for the clocks of the HPA and the signal.

The settings:

- **naive**: the model's naive rule, current replicas x delayed occupancy / target; **window 3 + step 1** adds its two dampers.
- **HPA, default behavior**: the HorizontalPodAutoscaler's algorithm on the same occupancy metric: tolerance 0.1; scale-up 100 %% or 4 pods per 15 s (select Max); scale-down 100 %% per 15 s after a 300 s stabilization window.
- **KPA, Knative defaults**: Knative's pod autoscaler (docs/kpa.md): the total demand (occupancy x the replicas it was measured across, uncapped) averaged over a 60 s stable window (4 turns) and a 6 s panic window (the newest sample), target %[11]s per pod; panic when the panic window asks for 2 x the ready pods, holding its high-water mark until a stable window has passed without; each decision within [floor(ready / 2), ceil(1000 x ready)]; it starts in panic on more than one pod.
- **Barometer, profile NAME**: the real pkg/signal computer with that profile's options (signal.ProfileOptions), fed through the real pkg/pressure collector (each replica reports the occupancy as CPU utilisation, which the collector caps at 1; the data is measured at the sample's turn, so the signal knows its age), read as KEDA reads it: ceil(ScaleValue / %[10]s). The surge asks for replicas at that target. **original** is the signal as it was: slow release (EWMA 30 s, a 2-minute gate, scale-in blocked while any dimension is at or above 0.25), no compensation. **responsive**, the default, follows demand (only a saturated dimension blocks scale-in, no gate window, no EWMA) and compensates the lag (docs/compensation.md): a lead of the Theil-Sen slope of the last 7 raw demands times the sample's age, only when the rise is significant (a Mann-Kendall z of at least 2), never negative; on stale samples a scale-in margin of 5 %% or 2.5 widths of the demand's noise, whichever is more; and the saturation surge (a capped sample across n replicas asks for 2n, n + 4 when stale and more, held while the samples stay saturated). At delay 0 the sample's age is 0, so the lead and the margin are off and the profile is the exact rule plus the surge.

Besides the reference series, every controller runs on %[12]d seeds of each of %[13]d generated families (below). The replica policies of pkg/policy (queue, fully_elastic, max_count, pool_with_threshold, fixed) have their own sections after the delay-3 run, and every controller runs on a queue trace at the end.

`, len(s.Load), s.Name, num(m.Saturation), num(m.Target*100), m.MinReplicas, m.MaxReplicas, m.InitialReplicas, m.Ideal(s.Load), sim.DefaultTurn, num(m.Target), num(m.Target), sim.FamilySeeds, len(sim.Families()))
}

func writeGoal(b *strings.Builder, naive, best []sim.Result, jump sim.Score) {
	g, z, n := best[goalDelay].Score, best[0].Score, naive[0].Score
	fmt.Fprintf(b, "## The goal at delay %d (the default profile, %s; reference series)\n\n| figure | goal | reached | |\n|---|---|---|---|\n", goalDelay, signal.DefaultProfile)
	fmt.Fprintf(b, "| total replica-turns | <= 331 | %d | %s |\n", g.Total, mark(g.Total <= 331))
	fmt.Fprintf(b, "| shortfall turns | <= 8 | %d | %s |\n", g.Shortfall, mark(g.Shortfall <= 8))
	fmt.Fprintf(b, "| oscillation | <= 8 | %d | %s |\n", g.Oscillation, mark(g.Oscillation <= 8))
	fmt.Fprintf(b, "| jump-test reaction (turns) | <= %d | %d | %s |\n", goalDelay, jump.Reaction, mark(jump.Reaction >= 0 && jump.Reaction <= goalDelay))
	notWorse := z.Total <= n.Total && z.Shortfall <= n.Shortfall && z.Oscillation <= n.Oscillation && z.Excess <= n.Excess
	fmt.Fprintf(b, "| delay 0: total / shortfall / oscillation / excess | not worse than naive (%d / %d / %d / %d) | %d / %d / %d / %d | %s |\n\n",
		n.Total, n.Shortfall, n.Oscillation, n.Excess, z.Total, z.Shortfall, z.Oscillation, z.Excess, mark(notWorse))
}

func mark(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// writeNotes states what the tables show; results are the reference
// series' runs, [setting][delay].
func writeNotes(b *strings.Builder, cfg sim.Config, results [][]sim.Result, fams []familyScores) {
	naive, orig, def := results[reportNaive][1:], results[reportOriginal], results[reportDefault]
	fmt.Fprintf(b, "## What the tables show\n\n")
	fmt.Fprintf(b, "- The naive rule multiplies a stale occupancy by the current count: at delays 1..6 it spends %s replica-turns (ideal %d). Barometer measures demand across the replicas the pressure was measured across, so it has no such over-correction; the original profile's slow release then holds %s replica-turns at every delay.\n",
		totalRange(naive), cfg.Model.Ideal(sim.Reference().Load), totalRange(orig))
	fmt.Fprintf(b, "- The collector caps each replica's pressure at 1, so one sample can raise KEDA's count by at most 1 / target (x%.2f): the original profile needs %d turns for the jump test at delay %d. The saturation surge asks for 2n (n + 4 when stale) at once: the default profile reacts in %d.\n",
		1/cfg.Model.Target, sim.Run(withDelay(cfg, goalDelay), sim.JumpTest(), settings()[reportOriginal].New(cfg.Model)).Score.Reaction, goalDelay,
		sim.Run(withDelay(cfg, goalDelay), sim.JumpTest(), settings()[reportDefault].New(cfg.Model)).Score.Reaction)
	fmt.Fprintf(b, "- At delay 0 the default profile's jump-test reaction is 1 turn, the naive rule's 0: a single fresh sample saturated on one replica only says \"at least one replica of work\"; the surge doubles to 2 and the next sample finishes the climb. Its reference-series figures at delay 0 are the naive rule's (%d / %d / %d).\n",
		def[0].Score.Total, def[0].Score.Shortfall, def[0].Score.Oscillation)
	k := results[reportKPA][goalDelay].Score
	fmt.Fprintf(b, "- The KPA reads a total, so like Barometer it has no over-correction, and its 60 s average damps noise; it has no lead and its panic mode needs the newest sample to ask for twice the ready pods, so at delay %d it is short in %d turns of the reference series (total %d).\n", goalDelay, k.Shortfall, k.Total)
	fmt.Fprintf(b, "- The HPA reads the same stale occupancy times its current ready pods, the naive rule's trap; its 300 s scale-down window then holds the over-shoot, which is why it spends the most. KEDA's own HPA layer (tolerance, stabilization) is not put on top of Barometer's read here: Barometer is read as ceil(ScaleValue / target).\n")
	fmt.Fprintf(b, "- The default profile's defaults were chosen on these series (docs/compensation.md tells how); every compensation is an option of pkg/signal, so the rows above are what a ScaledObject runs. Where a goal above is NOT met, docs/compensation.md (\"What it does not reach\") says why.\n\n")
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
