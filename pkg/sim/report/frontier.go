package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/control"
)

// reportStartups are the start-ups, in turns, every table runs at: a
// replica asked for serves only that many turns later.
var reportStartups = []int{0, 1, 2}

// frontierDelays are the delays the default profile is judged at equal
// shortfall.
var frontierDelays = []int{0, goalDelay, 6}

// goalConditions are the (delay, start-up) the goals are stated at: the
// goal's, then a longer delay and a slower start-up.
var goalConditions = []struct{ delay, startup int }{{goalDelay, 0}, {6, 0}, {goalDelay, 2}}

// frontierBound is the goal on the default's total over the frontier's.
const frontierBound = 1.05

// frontier is the default profile's run and the cheapest setting of the
// tuned baseline's wider grid (control.DefaultFrontierGrid) short in no
// more turns and reversing no more often: what the baseline, tuned in
// hindsight, costs for the default's shortfall and reversals.
type frontier struct {
	def  sim.Score
	pick control.MaxHoldTuning
	ok   bool // some setting is that good
}

func findFrontier(cfg sim.Config, s sim.Series, def sim.Score) frontier {
	w, h := control.DefaultFrontierGrid()
	pick, ok := control.ScoreMaxHoldGrid(cfg, s, w, h).Frontier(def.Shortfall, def.Oscillation)
	return frontier{def: def, pick: pick, ok: ok}
}

// ratio is the default's total over the frontier's.
func (f frontier) ratio() float64 { return float64(f.def.Total) / float64(f.pick.Score.Total) }

// met: no setting is as good, or the default costs at most frontierBound
// times the cheapest that is.
func (f frontier) met() bool { return !f.ok || f.ratio() <= frontierBound }

// String is the cell: the ratio and the frontier's (W, h) and total, or
// that none is as good.
func (f frontier) String() string {
	if !f.ok {
		return "none as good"
	}
	return fmt.Sprintf("%.3fx (W=%d h=%d, %d)", f.ratio(), f.pick.Options.Window, f.pick.Options.Hold, f.pick.Score.Total)
}

// goalCell is the goal table's cell: the default's total against the
// frontier's, and the ratio.
func (f frontier) goalCell() string {
	if !f.ok {
		return fmt.Sprintf("%d; no setting is as good: %s", f.def.Total, mark(true))
	}
	return fmt.Sprintf("%d vs %d (W=%d h=%d): %.3fx, %s", f.def.Total, f.pick.Score.Total, f.pick.Options.Window, f.pick.Options.Hold, f.ratio(), mark(f.met()))
}

// familyFrontier is a family's frontiers, one per seed: the default's
// total over it on each seed that has one.
type familyFrontier struct {
	ratios []float64 // sorted
	none   int       // seeds where no setting is as good
}

func (f familyFrontier) median() float64 {
	if len(f.ratios) == 0 {
		return 0
	}
	return median(f.ratios)
}

// met: the median seed (of those with a frontier) within frontierBound.
func (f familyFrontier) met() bool { return len(f.ratios) == 0 || f.median() <= frontierBound }

func (f familyFrontier) String() string {
	if len(f.ratios) == 0 {
		return fmt.Sprintf("none as good on any of %d seeds", f.none)
	}
	s := fmt.Sprintf("%.3fx (worst %.3fx", f.median(), f.ratios[len(f.ratios)-1])
	if f.none > 0 {
		s += fmt.Sprintf("; none as good on %d seeds", f.none)
	}
	return s + ")"
}

func newFamilyFrontier(fs []frontier) familyFrontier {
	var out familyFrontier
	for _, f := range fs {
		if f.ok {
			out.ratios = append(out.ratios, f.ratio())
		} else {
			out.none++
		}
	}
	slices.Sort(out.ratios)
	return out
}

// conditionIndexes are the positions of a (delay, start-up) in the
// report's scans.
func conditionIndexes(delay, startup int) (d, u, f int) {
	return slices.Index(reportDelays, delay), slices.Index(reportStartups, startup), slices.Index(frontierDelays, delay)
}

// startupName says a start-up in words.
func startupName(u int) string {
	switch u {
	case 0:
		return "start-up 0 (new replicas serve at once)"
	case 1:
		return "start-up 1 turn"
	}
	return fmt.Sprintf("start-up %d turns", u)
}

// writeFrontiers is the table of the default's total over the frontier's,
// for every real trace and family, at each frontier delay and start-up.
func writeFrontiers(b *strings.Builder, reals []realRuns, fams []familyScores) {
	w, h := control.DefaultFrontierGrid()
	fmt.Fprintf(b, "### Judged at equal shortfall\n\n")
	fmt.Fprintf(b, "The frontier is the tuned baseline's cheapest setting over windows %d..%d and holds %d..%d that is short in no more turns and reverses no more often than the default profile, deployed, on the same series (each seed of a family on its own): what the baseline costs, tuned in hindsight, for the default's shortfall and reversals. Each cell is the default's total over the frontier's, then the frontier's (W, h) and total; \"none as good\" where no setting of the grid is. A family's cell is the median over the seeds with a frontier, and the worst.\n\n",
		w[0], w[len(w)-1], h[0], h[len(h)-1])
	b.WriteString("| series |")
	for _, u := range reportStartups {
		for _, d := range frontierDelays {
			fmt.Fprintf(b, " delay %d, start-up %d |", d, u)
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(reportStartups)*len(frontierDelays)) + "\n")
	row := func(name string, cell func(u, f int) fmt.Stringer) {
		fmt.Fprintf(b, "| %s |", name)
		for u := range reportStartups {
			for f := range frontierDelays {
				fmt.Fprintf(b, " %s |", cell(u, f))
			}
		}
		b.WriteString("\n")
	}
	for _, r := range reals {
		row(r.trace.File, func(u, f int) fmt.Stringer { return r.frontiers[u][f] })
	}
	for _, fs := range fams {
		row(fs.family.Name+" (family)", func(u, f int) fmt.Stringer { return fs.frontiers[u][f] })
	}
	b.WriteString("\n")
}

// writeGoals states the default's goals on the real traces and the
// families at each goal condition.
func writeGoals(b *strings.Builder, sets []sim.Setting, reals []realRuns, fams []familyScores) {
	fmt.Fprintf(b, "On each real trace: shortfall in at most 3 %% of the turns; no more reversals than the HPA with its default behavior (%s); total replica-turns at most %sx the frontier's: the tuned baseline's cheapest setting, in hindsight, that is short in no more turns and reverses no more often than the default on the same trace (\"Judged at equal shortfall\" below; the goal holds where no setting is as good). On each family: no anchor (%s) with both fewer total replica-turns and fewer shortfall turns on the median, and the median seed's total at most %sx its frontier. The last column of the traces' tables is the tuned baseline as the earlier goal had it, a reference: the cheapest setting of its grid short in at most 3 %% of the turns, whatever its reversals. The real traces' and the families' sections below have every figure.\n\n",
		sets[reportHPA].Name, num(frontierBound), anchorNames(sets), num(frontierBound))
	for _, c := range goalConditions {
		fmt.Fprintf(b, "### At delay %d, %s\n\n", c.delay, startupName(c.startup))
		writeRealGoal(b, sets, reals, c.delay, c.startup)
		b.WriteString("Each family's cell is the median total / shortfall / oscillation over its seeds.\n\n")
		writeFamilyGoal(b, sets, fams, c.delay, c.startup)
	}
}
