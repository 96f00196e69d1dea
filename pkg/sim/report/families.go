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

// familyScores are one family's runs: median and worst [setting][delay].
type familyScores struct {
	family        sim.Family
	idealMedian   float64
	median, worst [][]figures
}

// scoreFamilies runs every setting on every seed of every family at every
// report delay. The families run side by side, one goroutine each; every
// run is deterministic, so the report does not depend on the schedule.
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
	for _, set := range sets {
		var med, worst []figures
		for _, d := range reportDelays {
			c := withDelay(cfg, d)
			var tot, short, osc []int
			for _, s := range series {
				o := sim.Run(c, s, set.Controller(c, s)).Score
				tot, short, osc = append(tot, o.Total), append(short, o.Shortfall), append(osc, o.Oscillation)
			}
			med = append(med, figures{median(tot), median(short), median(osc)})
			worst = append(worst, figures{float64(slices.Max(tot)), float64(slices.Max(short)), float64(slices.Max(osc))})
		}
		fs.median, fs.worst = append(fs.median, med), append(fs.worst, worst)
	}
	return fs
}

// median is the middle of the sorted counts, the mean of the two middles
// for an even count.
func median(v []int) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2])
	}
	return float64(s[n/2-1]+s[n/2]) / 2
}

// familyGoal checks the default profile's median on one family at the goal
// delay: no anchor, the tuned baseline included, has both fewer total
// and fewer shortfall turns. It returns the anchors that do.
func familyGoal(sets []sim.Setting, fs familyScores) []string {
	g := fs.median[reportDefault][goalDelay]
	var misses []string
	for _, a := range anchors {
		if o := fs.median[a][goalDelay]; o.total < g.total && o.shortfall < g.shortfall {
			misses = append(misses, "dominated by "+sets[a].Name)
		}
	}
	return misses
}

func writeFamilyGoal(b *strings.Builder, sets []sim.Setting, fams []familyScores) {
	fmt.Fprintf(b, "### On each family's median\n\n")
	fmt.Fprintf(b, "The goal: no anchor (%s) with both fewer total replica-turns and fewer shortfall turns. The tuned baseline is tuned for each seed at this delay. Each cell is the median total / shortfall / oscillation over %d seeds.\n\n",
		anchorNames(sets), sim.FamilySeeds)
	b.WriteString("| family | " + sets[reportDefault].Name)
	for _, a := range anchors {
		b.WriteString(" | " + sets[a].Name)
	}
	b.WriteString(" | |\n|---|---:|" + strings.Repeat("---:|", len(anchors)) + "---|\n")
	for _, fs := range fams {
		m := fs.median
		verdict := "met"
		if misses := familyGoal(sets, fs); len(misses) > 0 {
			verdict = "NOT met: " + strings.Join(misses, ", ")
		}
		fmt.Fprintf(b, "| %s | %s |", fs.family.Name, m[reportDefault][goalDelay])
		for _, a := range anchors {
			fmt.Fprintf(b, " %s |", m[a][goalDelay])
		}
		fmt.Fprintf(b, " %s |\n", verdict)
	}
	b.WriteString("\n")
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
	fmt.Fprintf(b, "Each family is %d series of %d turns from seeds 1..%d (`scaler simulate --trace family:NAME:SEED`); noise is multiplicative and uniform. For each setting the first row is the median over the seeds, the second the worst seed (each figure's maximum on its own). Each cell is total replica-turns / shortfall turns / oscillation.\n\n",
		sim.FamilySeeds, len(fams[0].family.Series(1).Load), sim.FamilySeeds)
	for _, fs := range fams {
		fmt.Fprintf(b, "### %s (median ideal %s replica-turns)\n\n%s.\n\n", fs.family.Name, num(fs.idealMedian), capitalize(fs.family.About))
		fmt.Fprintf(b, "| setting | |%s\n|---|---|%s\n", delayHeader(), strings.Repeat("---:|", len(reportDelays)))
		for i, set := range sets {
			for _, row := range []struct {
				what string
				figs []figures
			}{{"median", fs.median[i]}, {"worst", fs.worst[i]}} {
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

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
