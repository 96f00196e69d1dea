package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/internal/chart"
	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/policies"
)

// coveringTTL is a launch TTL one turn longer than a change (a launch or a
// removal) takes to show up in a sample goalDelay turns late: the
// decision's turn, the turn the replicas are measured in, and the delay.
const coveringTTL = time.Duration(goalDelay+2) * sim.DefaultTurn

// writePolicies writes the policies' delay scans on the reference series,
// the comparison of what replica count they see, and the notes.
func writePolicies(b *strings.Builder) {
	m, cfg := sim.ReferenceModel(), sim.Config{Model: sim.ReferenceModel()}
	ref := sim.Reference()
	fmt.Fprintf(b, "## The replica policies on the reference series, delays 0..6\n\n")
	fmt.Fprintf(b, `pkg/policy's policies run unchanged (pkg/sim/policies drives them), one decision per turn with the launch tracker, as the engine calls them. The count published is the decision's Desired, which KEDA reads with target 1; as for Barometer, no HPA tolerance or stabilization is put on top. Options are the documented defaults, except targetUtilization, set to the model's target occupancy (%s) so that the queue policy aims where the required replicas are counted, and minReplicas / maxReplicas, set to the model's %d..%d.

The policies read the same delayed sample as the other controllers (pkg/sim QueueSample, measured like the occupancy, across the replicas ready before the decision):

- **Replicas seen** are those the sample was measured across: KEDA tells an external scaler no replica count, so the engine counts the replicas its source saw, as late as the rest of the sample. The changes in flight, launches less removals, come from the launch tracker (launchTTL 15 s, one turn; see the comparison below).
- **The queue**: a replica does one second of work per second, so here it serves %s requests/s, a request being 1/%s s of work. This series is request traffic: work the replicas cannot do in a turn is shed at its end, as the metric-delay model scores each turn on its own load; only the queue trace below carries a backlog.
- **queue** reads the arrivals counter (requests so far), the completed runs and their run time, the backlog (the requests the turn could not serve) and busy (served work over the turn, rounded up). It multiplies counts by the service time it measures, so the unit cancels: base = ceil(rate x service / %s) is the required-replica rule on a rate smoothed with alpha 0.3.
- **fully_elastic** and **max_count** read pending work. Their rule asks for a replica per pending item, so the unit matters; the engine takes pending from the source's backlog gauges, which leaves the unit to the source. The simulated source counts the offered work in replica-sized items, one item being a replica's work for a turn at the target occupancy: ceil(load / (%s x %s)), the required-replica rule without its floor. Work in service counts: the rule runs one item per replica and never removes a busy one (docs/semantics.md, "Scale-down: idle only, cost first"), and the fluid model has no such victim choice, so pending without running work would let the rule remove the replicas that run it. max_count differs only in its maximum when unset (0); with maxReplicas %d set it runs exactly as fully_elastic.
- **pool_with_threshold** reads utilization, busy over the replicas seen (high 0.8, low 0.3, two ticks); every scale-down also needs it below 1 (an idle replica).
- **fixed** is always a no-op at the count it sees.
- The policies' clock is the sample's time, a constant shift of every window, cooldown and TTL; the samples the loop repeats until the pipeline fills add no time.

`, num(m.Target), m.MinReplicas, m.MaxReplicas, num(m.Saturation), num(m.Saturation), num(m.Target), num(m.Saturation), num(m.Target), m.MaxReplicas)
	sets := policies.Settings(m, policies.DefaultWiring())
	results := make([][]sim.Result, len(sets))
	for i, s := range sets {
		results[i] = sim.Scan(cfg, ref, s, reportDelays)
		fmt.Fprintf(b, "### %s\n\n", s.Name)
		writeScoreTable(b, results[i])
	}
	compare := writeWiring(b)
	writePolicyNotes(b, results, compare)
}

// wiring is one way of connecting the policies, for the comparison.
type wiring struct {
	name string
	w    policies.Wiring
}

func wirings() []wiring {
	covering := policies.DefaultWiring()
	covering.Launch.TTL = coveringTTL
	current := policies.DefaultWiring()
	current.CurrentReplicas = true
	return []wiring{
		{"sample's (the engine's), launchTTL 15 s", policies.DefaultWiring()},
		{fmt.Sprintf("sample's, launchTTL %s", fmtDuration(coveringTTL)), covering},
		{"current, launchTTL 15 s", current},
	}
}

// comparison holds the delay-3 scores of the wirings: [policy][wiring].
type comparison struct {
	kinds      []policy.Kind
	ref, queue [][]sim.Score
}

// compared are the policies whose wiring the report compares, and whose
// runs it draws on the queue trace: fixed never moves, and max_count runs
// as fully_elastic with a maximum set.
var compared = []policy.Kind{policy.Queue, policy.FullyElastic, policy.PoolWithThreshold}

// writeWiring compares, at the goal delay, the replica count the policies
// see: the engine's (the sample's), with a launch TTL that covers the
// delay, and the current ready count.
func writeWiring(b *strings.Builder) comparison {
	m, qm := sim.ReferenceModel(), sim.QueueModel()
	ref, queue := sim.Reference(), sim.ReferenceQueue().Series(qm, sim.DefaultTurn)
	fmt.Fprintf(b, "### The replica count the policies see, at delay %d\n\n", goalDelay)
	fmt.Fprintf(b, "A decision starts from current, the replicas seen plus the changes in flight (launches less removals, from the launch tracker), and a no-op publishes that count again. With the sample's replicas the count seen is %d turns old, and a change shows up in the sample %d turns after its decision. With launchTTL 15 s (one turn) every token expires before that: a scale-up is asked for again, and a no-op gives back a scale-down the sample has not seen yet. A launchTTL of %s, one turn longer than a change takes to show up, keeps launches and removals in flight until the sample shows them. The replicas ready at the decision (as the HPA reads its pods) are for comparison only: KEDA tells an external scaler no replica count. fixed is the same under all three; max_count is fully_elastic's row. Each cell is total / shortfall / oscillation; the queue trace (below) adds backlog turns.\n\n",
		goalDelay, goalDelay+1, fmtDuration(coveringTTL))
	b.WriteString("| policy | replicas seen | reference series | queue trace |\n|---|---|---:|---:|\n")
	cmp := comparison{kinds: compared}
	for _, k := range cmp.kinds {
		var refRow, queueRow []sim.Score
		for _, w := range wirings() {
			r := run(m, ref, setting(k, m, w.w))
			q := run(qm, queue, setting(k, qm, w.w))
			refRow, queueRow = append(refRow, r), append(queueRow, q)
			fmt.Fprintf(b, "| %s | %s | %d / %d / %d | %d / %d / %d / %d |\n", k.Name, w.name,
				r.Total, r.Shortfall, r.Oscillation, q.Total, q.Shortfall, q.Oscillation, q.BacklogTurns)
		}
		cmp.ref, cmp.queue = append(cmp.ref, refRow), append(cmp.queue, queueRow)
	}
	b.WriteString("\n")
	return cmp
}

// setting is the policy at its defaults read at m, wired by w.
func setting(k policy.Kind, m sim.Model, w policies.Wiring) sim.Setting {
	s, err := policies.DefaultSetting(k, m, w)
	if err != nil {
		panic(err) // the defaults and the wirings above are valid
	}
	return s
}

// run is one run at the goal delay.
func run(m sim.Model, s sim.Series, set sim.Setting) sim.Score {
	cfg := sim.Config{Model: m, Delay: goalDelay}
	return sim.Run(cfg, s, set.New(m)).Score
}

// writePolicyNotes states what the policy tables show; results are
// [policy][delay] in the order of policy.Kinds.
func writePolicyNotes(b *strings.Builder, results [][]sim.Result, cmp comparison) {
	at := func(k policy.Kind, delay int) sim.Score {
		i := slices.IndexFunc(policy.Kinds(), func(o policy.Kind) bool { return o.Name == k.Name })
		return results[i][delay].Score
	}
	ideal := sim.ReferenceModel().Ideal(sim.Reference().Load)
	q0, e0, p0, f0 := at(policy.Queue, 0), at(policy.FullyElastic, 0), at(policy.PoolWithThreshold, 0), at(policy.Fixed, 0)
	fmt.Fprintf(b, "## What the policy tables show\n\n")
	fmt.Fprintf(b, "- With a fresh sample (delay 0) fully_elastic is the required-replica rule one step per turn: %d replica-turns (ideal %d), short in %d turn(s) where the requirement moved by more than one. The queue policy spends %d with %d shortfall turns: its arrival rate is an average (alpha 0.3) that trails a rising load, and it scales down one replica per 30 s after a 60 s window. pool_with_threshold, %d / %d, only adds a replica above 80 %% utilization for two turns, above the 70 %% at which the requirement is counted. fixed keeps its %d replicas: %d turns short.\n",
		e0.Total, ideal, e0.Shortfall, q0.Total, q0.Shortfall, p0.Total, p0.Shortfall, f0.Peak, f0.Shortfall)
	d := goalDelay
	for i, k := range cmp.kinds {
		eng, cov, cur := cmp.ref[i][0], cmp.ref[i][1], cmp.ref[i][2]
		fmt.Fprintf(b, "- %s at delay %d, reference series: oscillation %d with the sample's replicas, %d with launchTTL %s, %d with the current replicas (total %d / %d / %d, shortfall %d / %d / %d).\n",
			k.Name, d, eng.Oscillation, cov.Oscillation, fmtDuration(coveringTTL), cur.Oscillation, eng.Total, cov.Total, cur.Total, eng.Shortfall, cov.Shortfall, cur.Shortfall)
	}
	same := true
	for i := range cmp.kinds {
		same = same && cmp.ref[i][1].Oscillation == cmp.ref[i][2].Oscillation && cmp.queue[i][1].Oscillation == cmp.queue[i][2].Oscillation
	}
	fmt.Fprintf(b, "- So under metric delay most of the policies' oscillation comes from the replica count they start from, not from their rules: with the default launchTTL a no-op republishes a count that is %d turns old. The launch tracker counts removals as well as launches, so with a launchTTL that covers the delay (%s) the sample's replicas ", d, fmtDuration(coveringTTL))
	if same {
		b.WriteString("oscillate exactly as the current ready count does, on both series.")
	} else {
		b.WriteString("come close to the current ready count (the rows above).")
	}
	fmt.Fprintf(b, " With the default launchTTL (15 s, one turn) every token expires by the next decision, long before a sample %d turns late shows the change, so the engine's default row counts nothing in flight: launchTTL has to cover the time a change takes to reach the source's sample.\n", d)
	fmt.Fprintf(b, "- The scale-down guards (the queue policy's window, cooldown and busy floor; one step per tick) keep the policies from the naive rule's over-correction: none multiplies a stale occupancy by a current count.\n\n")
}

// writeQueueTrace writes the queue trace's section and returns the
// delay-3 runs to draw.
func writeQueueTrace(b *strings.Builder, sets []sim.Setting) []sim.Named {
	qm := sim.QueueModel()
	trace := sim.ReferenceQueue()
	s := trace.Series(qm, sim.DefaultTurn)
	cfg := sim.Config{Model: qm}
	w := sim.ReferenceQueueWave(sim.QueueSeed)
	batchReq := qm.Required(s.Load[w.BatchTurn])
	fmt.Fprintf(b, "## The queue trace\n\n")
	fmt.Fprintf(b, `A generated work-queue trace (%s; `+"`scaler simulate --trace queue`"+`, or any CSV of `+"`turn,arrivals,serviceSeconds`"+`): %d turns of %s; arrivals %s +/- %s items/s over a %s-turn wave with +/-%s %% noise; a batch of %s items at turn %d; %s s of service per item (+/-%s %%), x%s in turns %d..%d, a slow dependency: the same arrivals need %s times the replicas. The event window (reaction, shortfall in jump) is the slow one.

Work waits here: what the replicas cannot do in a turn stays queued, first in, first out, and later turns serve it. A replica does one second of work per second (saturation 1, so load is in busy replicas): load = arrivals x service / %s, required = ceil(load / %s), %d..%d replicas starting at %d; the ideal is %d replica-turns. The batch turn alone requires %d replicas, more than the %d allowed, so every controller is short there and the ideal counts replicas nobody may have. The occupancy the pkg/sim controllers read counts the work carried into the turn as load; the policies read the queue as on the reference series (a pending item is %s s of work, a replica's turn at the target occupancy).

Backlog turns count turns that end with items waiting; peak backlog is the most items waiting at a turn's end; mean and max wait are the served items' time in the queue, in whole turns (an item served in the turn it arrived waits 0; the max also counts items still waiting at the end).

`, trace.Name, w.Turns, fmtDuration(w.Turn), num(w.Rate), num(w.Swing), num(w.Period), num(w.Noise*100), num(w.Batch), w.BatchTurn,
		num(w.Service), num(w.ServiceNoise*100), num(w.Slow), w.SlowStart, w.SlowEnd-1, num(w.Slow),
		fmtDuration(w.Turn), num(qm.Target), qm.MinReplicas, qm.MaxReplicas, qm.InitialReplicas, qm.Ideal(s.Load), batchReq, qm.MaxReplicas,
		num(float64(w.Turn.Seconds())*qm.Target))

	all := append(append([]sim.Setting(nil), sets...), policies.Settings(qm, policies.DefaultWiring())...)
	scans := make([][]sim.Result, len(all))
	for i, set := range all {
		scans[i] = sim.Scan(cfg, s, set, reportDelays)
	}
	fmt.Fprintf(b, "### Every controller at delay %d\n\n", goalDelay)
	b.WriteString("| setting | changes | oscillation | excess | shortfall | shortfall in jump | total | peak | reaction | backlog turns | peak backlog | mean wait s | max wait s |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, set := range all {
		o := scans[i][goalDelay].Score
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %.0f | %.1f | %.0f |\n", set.Name,
			o.Changes, o.Oscillation, o.Excess, o.Shortfall, o.JumpShortfall, o.Total, o.Peak, o.Reaction,
			o.BacklogTurns, o.PeakBacklog, o.MeanWait, o.MaxWait)
	}
	fmt.Fprintf(b, "\n### Delays 0..6\n\nEach cell is total replica-turns / shortfall turns / oscillation / backlog turns.\n\n")
	fmt.Fprintf(b, "| setting |%s\n|---|%s\n", delayHeader(), strings.Repeat("---:|", len(reportDelays)))
	for i, set := range all {
		fmt.Fprintf(b, "| %s |", set.Name)
		for _, r := range scans[i] {
			o := r.Score
			fmt.Fprintf(b, " %d / %d / %d / %d |", o.Total, o.Shortfall, o.Oscillation, o.BacklogTurns)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	writeQueueNotes(b, all, scans, qm.Ideal(s.Load))

	drawn := []string{sets[reportNaive].Name, sets[reportHPA].Name, sets[reportKPA].Name, sets[reportMaxHold].Name, sets[reportDefault].Name}
	for _, k := range compared {
		drawn = append(drawn, k.Name)
	}
	var runs []sim.Named
	for i, set := range all {
		if slices.Contains(drawn, set.Name) {
			o := scans[i][goalDelay].Score
			name := fmt.Sprintf("%s: %s, backlog turns %d", set.Name, scoreLine(o), o.BacklogTurns)
			runs = append(runs, sim.Named{Name: name, Result: scans[i][goalDelay]})
		}
	}
	return runs
}

// writeQueueNotes states what the queue trace's tables show; scans are
// [setting][delay].
func writeQueueNotes(b *strings.Builder, all []sim.Setting, scans [][]sim.Result, ideal int) {
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	d := goalDelay
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Compare(scans[x][d].Score.BacklogTurns, scans[y][d].Score.BacklogTurns)
	})
	fmt.Fprintf(b, "What the queue trace shows:\n\n")
	var fewest []string
	for _, i := range order[:3] {
		o := scans[i][d].Score
		fewest = append(fewest, fmt.Sprintf("%s (%d, total %d, shortfall %d)", all[i].Name, o.BacklogTurns, o.Total, o.Shortfall))
	}
	fmt.Fprintf(b, "- At delay %d the fewest backlog turns: %s. The ideal is %d replica-turns.\n", d, strings.Join(fewest, "; "), ideal)
	var fresh []string
	for i, set := range all {
		if slices.Contains([]string{all[reportDefault].Name, policy.Queue.Name, policy.FullyElastic.Name}, set.Name) {
			o := scans[i][0].Score
			fresh = append(fresh, fmt.Sprintf("%s %d / %d / %d", set.Name, o.Total, o.JumpShortfall, o.BacklogTurns))
		}
	}
	fmt.Fprintf(b, "- With a fresh sample (delay 0), total / shortfall in the slow window / backlog turns: %s. The queue policy learns the doubled service time from completed runs through its average and fully_elastic climbs one replica per turn, so both trail the slow window; the occupancy shows the extra work in the first sample.\n", strings.Join(fresh, "; "))
	fmt.Fprintf(b, "- The picture below shows the stale replica count at work (the default launchTTL): the queue policy's scale-downs are given back by the next no-op, and pool_with_threshold's one-step decisions, each taken from a count %d turns old, form %d interleaved staircases.\n\n", d, d+1)
}

// queueCeiling is how high the queue picture's y axis goes: the batch's
// requirement would squeeze the rest of the picture into a strip.
const queueCeiling = 16

// queueChart draws the queue trace's runs, load and required cut at
// queueCeiling (the title says so).
func queueChart(runs []sim.Named) chart.Figure {
	qm := sim.QueueModel()
	w := sim.ReferenceQueueWave(sim.QueueSeed)
	f := sim.Chart(qm, fmt.Sprintf("Queue trace at metric delay %d (load and required drawn up to %d; the batch at turn %d requires more)", goalDelay, queueCeiling, w.BatchTurn), runs)
	for _, p := range f.Panels {
		for _, l := range p.Lines {
			for i, v := range l.Values {
				l.Values[i] = min(v, queueCeiling)
			}
		}
	}
	return f
}

// fmtDuration prints 75s as "75 s".
func fmtDuration(d time.Duration) string { return num(d.Seconds()) + " s" }
