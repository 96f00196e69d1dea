package report

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// figures are the three counts the family tables give; a median of an
// even count of seeds may end in .5.
type figures struct{ total, shortfall, oscillation float64 }

func (f figures) String() string {
	return fmt.Sprintf("%s / %s / %s", num(f.total), num(f.shortfall), num(f.oscillation))
}

// familyScores are one family's runs: median and worst
// [start-up][setting][delay], and the default profile's frontiers
// [start-up][frontier delay].
type familyScores struct {
	family        sim.Family
	idealMedian   float64
	median, worst [][][]figures
	frontiers     [][]familyFrontier
}

// scoreFamilies runs every setting on every seed of every family at every
// report delay and start-up. The families run side by side, one goroutine
// each; every run is deterministic, so the report does not depend on the
// schedule.
func scoreFamilies(cfg sim.Config, sets []sim.Setting) []familyScores {
	fams := sim.Families()
	out := make([]familyScores, len(fams))
	var wg sync.WaitGroup
	for i, f := range fams {
		wg.Go(func() { out[i] = scoreFamily(cfg, f, sets) })
	}
	wg.Wait()
	return out
}

func scoreFamily(cfg sim.Config, f sim.Family, sets []sim.Setting) familyScores {
	series := make([]sim.Series, sim.FamilySeeds)
	ideals := make([]int, len(series))
	for i := range series {
		series[i] = f.Series(int64(i + 1))
		ideals[i] = cfg.Model.Ideal(series[i].Load)
	}
	fs := familyScores{family: f, idealMedian: median(ideals)}
	for _, u := range reportStartups {
		var medians, worsts [][]figures
		var fronts [][]frontier // [frontier delay][seed]
		for i, set := range sets {
			var med, worst []figures
			for _, d := range reportDelays {
				c := withDelay(cfg, d)
				c.StartupTurns = u
				fd := slices.Index(frontierDelays, d)
				if i == reportDefault && fd >= 0 {
					fronts = append(fronts, nil)
				}
				var tot, short, osc []int
				for _, s := range series {
					o := sim.Run(c, s, set.Controller(c, s)).Score
					tot, short, osc = append(tot, o.Total), append(short, o.Shortfall), append(osc, o.Oscillation)
					if i == reportDefault && fd >= 0 {
						fronts[fd] = append(fronts[fd], findFrontier(c, s, o))
					}
				}
				med = append(med, figures{median(tot), median(short), median(osc)})
				worst = append(worst, figures{float64(slices.Max(tot)), float64(slices.Max(short)), float64(slices.Max(osc))})
			}
			medians, worsts = append(medians, med), append(worsts, worst)
		}
		var ff []familyFrontier
		for _, f := range fronts {
			ff = append(ff, newFamilyFrontier(f))
		}
		fs.median, fs.worst, fs.frontiers = append(fs.median, medians), append(fs.worst, worsts), append(fs.frontiers, ff)
	}
	return fs
}

// median is the middle of the sorted values, the mean of the two middles
// for an even count.
func median[T int | float64](v []T) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2])
	}
	return float64(s[n/2-1]+s[n/2]) / 2
}

// familyGoal checks the default profile's median on one family at a
// (delay, start-up): no anchor, the tuned baseline included, has both
// fewer total and fewer shortfall turns, and the default costs at most
// frontierBound times its frontier on the median seed. It returns the
// goals missed.
func familyGoal(sets []sim.Setting, fs familyScores, delay, startup int) []string {
	d, u, f := conditionIndexes(delay, startup)
	g := fs.median[u][reportDefault][d]
	var misses []string
	for _, a := range anchors {
		if o := fs.median[u][a][d]; o.total < g.total && o.shortfall < g.shortfall {
			misses = append(misses, "dominated by "+sets[a].Name)
		}
	}
	if !fs.frontiers[u][f].met() {
		misses = append(misses, "total")
	}
	return misses
}

func writeFamilyGoal(b *strings.Builder, sets []sim.Setting, fams []familyScores, delay, startup int) {
	d, u, f := conditionIndexes(delay, startup)
	b.WriteString("| family | " + sets[reportDefault].Name)
	for _, a := range anchors {
		b.WriteString(" | " + sets[a].Name)
	}
	fmt.Fprintf(b, " | total over the frontier (median seed) | |\n|---|---:|%s---|---|\n", strings.Repeat("---:|", len(anchors)))
	met := 0
	for _, fs := range fams {
		m := fs.median[u]
		verdict := "met"
		if misses := familyGoal(sets, fs, delay, startup); len(misses) > 0 {
			verdict = "NOT met: " + strings.Join(misses, ", ")
		} else {
			met++
		}
		fmt.Fprintf(b, "| %s | %s |", fs.family.Name, m[reportDefault][d])
		for _, a := range anchors {
			fmt.Fprintf(b, " %s |", m[a][d])
		}
		fmt.Fprintf(b, " %s | %s |\n", fs.frontiers[u][f], verdict)
	}
	fmt.Fprintf(b, "\nEvery goal met on %d of the %d families (delay %d, %s).\n\n", met, len(fams), delay, startupName(startup))
}

func anchorNames(sets []sim.Setting) string {
	var names []string
	for _, a := range anchors {
		names = append(names, sets[a].Name)
	}
	return strings.Join(names, "; ")
}

func writeFamilies(b *strings.Builder, sets []sim.Setting, fams []familyScores) {
	fmt.Fprintf(b, "## The series families, delays 0..6\n\n")
	fmt.Fprintf(b, "Each family is %d series of %d turns from seeds 1..%d (`scaler simulate --trace family:NAME:SEED`); noise is multiplicative and uniform. Each runs with new replicas serving at once, then with a start-up of 1 and 2 turns. For each setting the first row is the median over the seeds, the second the worst seed (each figure's maximum on its own). Each cell is total replica-turns / shortfall turns / oscillation.\n\n",
		sim.FamilySeeds, len(fams[0].family.Series(1).Load), sim.FamilySeeds)
	for _, fs := range fams {
		fmt.Fprintf(b, "### %s (median ideal %s replica-turns)\n\n%s.\n\n", fs.family.Name, num(fs.idealMedian), capitalize(fs.family.About))
		for u, up := range reportStartups {
			fmt.Fprintf(b, "%s:\n\n", capitalize(startupName(up)))
			fmt.Fprintf(b, "| setting | |%s\n|---|---|%s\n", delayHeader(), strings.Repeat("---:|", len(reportDelays)))
			for i, set := range sets {
				for _, row := range []struct {
					what string
					figs []figures
				}{{"median", fs.median[u][i]}, {"worst", fs.worst[u][i]}} {
					fmt.Fprintf(b, "| %s | %s |", set.Name, row.what)
					for _, f := range row.figs {
						fmt.Fprintf(b, " %s |", f)
					}
					b.WriteString("\n")
				}
			}
			b.WriteString("\n")
		}
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
