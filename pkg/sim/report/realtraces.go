package report

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/control"
)

// realPeak and realTarget scale every real trace: its highest count needs
// realPeak replicas at realTarget occupancy (sim.PeakModel).
const (
	realPeak   = 24
	realTarget = 0.7
)

// realSettings are the settings the real traces run: the report's, then
// the default profile's raw signal, beside its deployed row.
func realSettings() []sim.Setting {
	return append(settings(), barometer(signal.DefaultProfile, control.RawSignal))
}

// reportRaw is the default profile's raw signal in realSettings.
const reportRaw = reportDefault + 1

// realRuns are one real trace's runs.
type realRuns struct {
	trace sim.RealTrace
	model sim.Model
	ideal int
	// scores are [start-up][setting][delay]; the tuned baseline's are its
	// tunings'.
	scores [][][]sim.Score
	// tunings are the tuned baseline's picks, [start-up][delay].
	tunings [][]control.MaxHoldTuning
	// frontiers are the default profile's, [start-up][frontier delay].
	frontiers [][]frontier
	// halves are the trace's two halves at the goal delay, each scored
	// with the baseline tuned on the other half.
	halves [2]realHalf
}

// realHalf is one half of a real trace at the goal delay: the tuned
// baseline tuned in advance (on the other half) and run on it, the
// baseline tuned on it in hindsight, and the default profile.
type realHalf struct {
	from, to  int // the turns [from, to)
	advance   control.MaxHoldTuning
	inAdvance sim.Score
	hindsight control.MaxHoldTuning
	def       sim.Score
}

// scoreRealTraces runs every setting on every trace at every report
// delay, the traces side by side; the tuned baseline is tuned once per
// trace and delay.
func scoreRealTraces(traces []sim.RealTrace, sets []sim.Setting) ([]realRuns, error) {
	out := make([]realRuns, len(traces))
	errs := make([]error, len(traces))
	var wg sync.WaitGroup
	for i, rt := range traces {
		wg.Go(func() { out[i], errs[i] = scoreRealTrace(rt, sets) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scoreRealTrace(rt sim.RealTrace, sets []sim.Setting) (realRuns, error) {
	s, err := rt.Load()
	if err != nil {
		return realRuns{}, err
	}
	m := sim.PeakModel(s, realTarget, realPeak)
	n := len(reportStartups)
	r := realRuns{trace: rt, model: m, ideal: m.Ideal(s.Load),
		scores: make([][][]sim.Score, n), tunings: make([][]control.MaxHoldTuning, n), frontiers: make([][]frontier, n)}
	// Each start-up in a goroutine of its own, the halves in another: the
	// longest trace's runs would otherwise finish on one core.
	var wg sync.WaitGroup
	for k, u := range reportStartups {
		wg.Go(func() {
			cfg := func(d int) sim.Config { return sim.Config{Model: m, Delay: d, StartupTurns: u, Turn: rt.Step} }
			for _, d := range reportDelays {
				r.tunings[k] = append(r.tunings[k], control.TuneMaxHold(cfg(d), s, control.DefaultMaxHoldGrid()))
			}
			r.scores[k] = make([][]sim.Score, len(sets))
			for i, set := range sets {
				for j, d := range reportDelays {
					if i == reportMaxHold {
						r.scores[k][i] = append(r.scores[k][i], r.tunings[k][j].Score)
						continue
					}
					r.scores[k][i] = append(r.scores[k][i], sim.Run(cfg(d), s, set.Controller(cfg(d), s)).Score)
				}
			}
			for _, d := range frontierDelays {
				r.frontiers[k] = append(r.frontiers[k], findFrontier(cfg(d), s, r.scores[k][reportDefault][slices.Index(reportDelays, d)]))
			}
		})
	}
	wg.Go(func() { r.halves = scoreHalves(s, m, rt.Step, sets[reportDefault]) })
	wg.Wait()
	return r, nil
}

// scoreHalves splits s in two and scores each half at the goal delay with
// the baseline tuned on the other half, the baseline tuned on the half
// itself, and def. Each half starts with what its first count needs.
func scoreHalves(s sim.Series, m sim.Model, turn time.Duration, def sim.Setting) [2]realHalf {
	n := len(s.Load)
	part := func(from, to int) (sim.Series, sim.Config) {
		p := s
		p.Load, p.EventStart, p.EventEnd = s.Load[from:to], 0, 0
		pm := m
		pm.InitialReplicas = m.Required(p.Load[0])
		return p, sim.Config{Model: pm, Delay: goalDelay, Turn: turn}
	}
	out := [2]realHalf{{from: 0, to: n / 2}, {from: n / 2, to: n}}
	var tuned [2]control.MaxHoldTuning
	for i := range out {
		p, cfg := part(out[i].from, out[i].to)
		tuned[i] = control.TuneMaxHold(cfg, p, control.DefaultMaxHoldGrid())
		out[i].def = sim.Run(cfg, p, def.Controller(cfg, p)).Score
	}
	for i := range out {
		p, cfg := part(out[i].from, out[i].to)
		out[i].hindsight, out[i].advance = tuned[i], tuned[1-i]
		out[i].inAdvance = sim.Run(cfg, p, control.NewMaxHold(cfg.Model, tuned[1-i].Options)).Score
	}
	return out
}

// shortPercent is a run's shortfall in percent of the trace's turns.
func (r realRuns) shortPercent(sc sim.Score) float64 {
	return 100 * float64(sc.Shortfall) / float64(r.trace.Turns)
}

// realCell is one run's figures: shortfall % of the turns / reversals /
// total replica-turns / total over the ideal.
func (r realRuns) cell(sc sim.Score) string {
	return fmt.Sprintf("%.1f %% / %d / %d / %.2fx", r.shortPercent(sc), sc.Oscillation, sc.Total, float64(sc.Total)/float64(r.ideal))
}

// pick is a tuning's (W, h), starred when no setting met the budget.
func pick(t control.MaxHoldTuning) string {
	p := fmt.Sprintf("W=%d h=%d", t.Options.Window, t.Options.Hold)
	if !t.WithinBudget {
		p += " *"
	}
	return p
}

func writeRealTraces(b *strings.Builder, sets []sim.Setting, reals []realRuns) {
	g := control.DefaultMaxHoldGrid()
	fmt.Fprintf(b, "## The real traces, delays 0..6\n\n")
	fmt.Fprintf(b, "Seven public request-rate traces of real services (`pkg/sim/testdata/traces`; PROVENANCE.md there gives their origin, licence and the exact cut). Each keeps its raw counts per step and runs with one turn per step, the time its counts really cover; the model is scaled so that the trace's highest count needs exactly %d replicas at the target occupancy %s (`sim.PeakModel`: replicas 1..%d, starting at what the first count needs). Each trace runs with new replicas serving at once, then with a start-up of 1 and 2 turns (a replica counts only once it is ready; the signal knows the start-up, as a k8s:// target's sampler measures it). From the command line: `scaler simulate --trace pkg/sim/testdata/traces/FILE --turn STEP --saturation S --occupancy %s --max-replicas %d --initial-replicas N --compare` (`--startup 1` for a start-up), with S and N from PROVENANCE.md.\n\n",
		realPeak, num(realTarget), 2*realPeak, num(realTarget), 2*realPeak)
	fmt.Fprintf(b, "Each cell is shortfall (percent of the turns with fewer ready replicas than required) / reversals (oscillation: changes that reverse the previous change's direction) / total replica-turns / total over the ideal. The tuned baseline is tuned for each trace, each delay and each start-up over windows %d..%d and holds %d..%d, keeping the cheapest setting short in at most %s %% of the turns; its row below says which (W, h) it picked, starred where no setting of the grid met the %s %%, and the pick is then the least short. The last row is the default profile's raw signal, ceil(value / target) with no HPA, beside its deployed row.\n\n",
		g.Windows[0], g.Windows[len(g.Windows)-1], g.Holds[0], g.Holds[len(g.Holds)-1], num(100*g.ShortfallBudget), num(100*g.ShortfallBudget))
	d := goalIndex()
	var raw, deployed int
	for _, r := range reals {
		raw, deployed = raw+r.scores[0][reportRaw][d].Oscillation, deployed+r.scores[0][reportDefault][d].Oscillation
	}
	fmt.Fprintf(b, "Summed over the seven traces at delay %d, the default profile's raw signal reverses %d times and the same signal deployed %d: the HPA's tolerance (no change within 10 %%) absorbs the smallest changes.\n\n", goalDelay, raw, deployed)
	for _, r := range reals {
		fmt.Fprintf(b, "### %s (`%s`)\n\n%d turns of %s; ideal %d replica-turns.\n\n", r.trace.Source, r.trace.File, r.trace.Turns, fmtDuration(r.trace.Step), r.ideal)
		for u, up := range reportStartups {
			fmt.Fprintf(b, "%s:\n\n", capitalize(startupName(up)))
			fmt.Fprintf(b, "| setting |%s\n|---|%s\n", delayHeader(), strings.Repeat("---:|", len(reportDelays)))
			for i, set := range sets {
				fmt.Fprintf(b, "| %s |", set.Name)
				for _, sc := range r.scores[u][i] {
					fmt.Fprintf(b, " %s |", r.cell(sc))
				}
				b.WriteString("\n")
				if i == reportMaxHold {
					b.WriteString("| maxhold's pick |")
					for _, t := range r.tunings[u] {
						fmt.Fprintf(b, " %s |", pick(t))
					}
					b.WriteString("\n")
				}
			}
			b.WriteString("\n")
		}
	}
}

// realGoal is the default profile's figures on one real trace at a
// (delay, start-up) against its goals; the misses name the goals not met.
type realGoal struct {
	def, hpa, maxhold     sim.Score
	tuning                control.MaxHoldTuning
	front                 frontier
	shortOK, revOK, totOK bool
	misses                []string
}

func goalOnTrace(r realRuns, delay, startup int) realGoal {
	d, u, f := conditionIndexes(delay, startup)
	g := realGoal{def: r.scores[u][reportDefault][d], hpa: r.scores[u][reportHPA][d], maxhold: r.scores[u][reportMaxHold][d], tuning: r.tunings[u][d], front: r.frontiers[u][f]}
	g.shortOK = 100*g.def.Shortfall <= 3*r.trace.Turns
	g.revOK = g.def.Oscillation <= g.hpa.Oscillation
	g.totOK = g.front.met()
	for _, m := range []struct {
		ok   bool
		name string
	}{{g.shortOK, "shortfall"}, {g.revOK, "reversals"}, {g.totOK, "total"}} {
		if !m.ok {
			g.misses = append(g.misses, m.name)
		}
	}
	return g
}

// goalIndex is goalDelay's position in reportDelays.
func goalIndex() int {
	for i, d := range reportDelays {
		if d == goalDelay {
			return i
		}
	}
	panic("the goal delay is not a report delay")
}

// writeRealGoal states the default's goals on every real trace at a
// (delay, start-up).
func writeRealGoal(b *strings.Builder, sets []sim.Setting, reals []realRuns, delay, startup int) {
	fmt.Fprintf(b, "| trace | shortfall <= 3 %% of the turns | reversals <= the HPA's | total <= %sx the frontier's | | the tuned baseline, in hindsight (a reference) |\n|---|---|---|---|---|---|\n", num(frontierBound))
	met := 0
	for _, r := range reals {
		g := goalOnTrace(r, delay, startup)
		verdict := "met"
		if len(g.misses) > 0 {
			verdict = "NOT met: " + strings.Join(g.misses, ", ")
		} else {
			met++
		}
		fmt.Fprintf(b, "| %s | %d of %d (%.1f %%): %s | %d vs %d: %s | %s | %s | %d (%s, short %.1f %%) |\n", r.trace.File, g.def.Shortfall, r.trace.Turns, r.shortPercent(g.def), mark(g.shortOK),
			g.def.Oscillation, g.hpa.Oscillation, mark(g.revOK), g.front.goalCell(), verdict, g.maxhold.Total, pick(g.tuning), r.shortPercent(g.maxhold))
	}
	fmt.Fprintf(b, "\nEvery goal met on %d of the %d traces (%s, delay %d, %s).\n\n", met, len(reals), sets[reportDefault].Name, delay, startupName(startup))
}

// writeRealAdvance shows the tuned baseline tuned in advance: on one half
// of each trace, then run on the other.
func writeRealAdvance(b *strings.Builder, reals []realRuns) {
	fmt.Fprintf(b, "### The tuned baseline, tuned in advance\n\n")
	fmt.Fprintf(b, "The goal's baseline is tuned on the very turns it is scored on: in hindsight. Here each trace is cut in two halves, and each half is run at delay %d by the baseline tuned (the same grid, the same 3 %% budget) on the other half, as an operator would tune it on last week's load for this week's; beside it the baseline tuned on the half itself, and the default profile, deployed, which is tuned on neither. Each cell is the baseline's (W, h) (starred where none of the grid met 3 %% on the half it was tuned on), then shortfall in percent of the half's turns / total replica-turns; a shortfall over 3 %% is marked.\n\n", goalDelay)
	b.WriteString("| trace | half | tuned on the other half | tuned on this half (hindsight) | the default |\n|---|---|---|---|---|\n")
	halves, advanceOver, defaultOver := 0, 0, 0
	for _, r := range reals {
		for _, h := range r.halves {
			turns := h.to - h.from
			cell := func(setting string, sc sim.Score, over *int) string {
				c := fmt.Sprintf("%s%.2f %% / %d", setting, 100*float64(sc.Shortfall)/float64(turns), sc.Total)
				if 100*sc.Shortfall > 3*turns {
					c += ", over 3 %"
					if over != nil {
						*over++
					}
				}
				return c
			}
			halves++
			fmt.Fprintf(b, "| %s | turns %d..%d | %s | %s | %s |\n", r.trace.File, h.from, h.to-1,
				cell(pick(h.advance)+": ", h.inAdvance, &advanceOver), cell(pick(h.hindsight)+": ", h.hindsight.Score, nil), cell("", h.def, &defaultOver))
		}
	}
	fmt.Fprintf(b, "\nTuned in advance, the baseline is short in more than 3 %% of the turns on %d of the %d halves; the default on %d.\n\n", advanceOver, halves, defaultOver)
}
