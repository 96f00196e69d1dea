package command

import (
	"bytes"
	"fmt"
	"io"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

// writeRun prints one run: the model, how the setting was tuned (note,
// when not empty), its scores and the SPEC metrics (and the queue's, on a
// queue trace).
func writeRun(w io.Writer, cfg sim.Config, series sim.Series, name, note string, s sim.Score, queue bool) error {
	var b bytes.Buffer
	if err := sim.WriteModel(&b, cfg.Model, series); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nmetric delay %d turns, startup %d turns, %s per turn\n", cfg.Delay, cfg.StartupTurns, cfg.Turn)
	writeNote(&b, note)
	if err := sim.WriteSettings(&b, []sim.Row{{Name: name, Score: s}}); err != nil {
		return err
	}
	fmt.Fprintf(&b, "peak replicas %d, reaction %d turns\n", s.Peak, s.Reaction)
	fmt.Fprintf(&b, "SPEC: θU %.1f %%, θO %.1f %%, τU %.1f %%, τO %.1f %%, υ %.1f %%, jitter %.2f /min\n",
		s.UnderAccuracy, s.OverAccuracy, s.UnderTimeshare, s.OverTimeshare, s.Instability, s.Jitter)
	if queue {
		fmt.Fprintf(&b, "queue: backlog turns %d, peak backlog %.0f items, mean wait %.1f s, max wait %.0f s\n",
			s.BacklogTurns, s.PeakBacklog, s.MeanWait, s.MaxWait)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeTables prints the model's table layout: the delay scan and the jump
// test. A tuned setting keeps, at every delay, what it was tuned to at
// the run's (note says which).
func writeTables(w io.Writer, cfg sim.Config, s sim.Series, set sim.Setting, note string, o *simulateOptions) error {
	var b bytes.Buffer
	if err := sim.WriteModel(&b, cfg.Model, s); err != nil {
		return err
	}
	writeNote(&b, note)
	heading := set.Name
	if o.controller == controllerNaive && heading == "unadjusted" {
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

// writeNote prints a note on its own line, if there is one.
func writeNote(b *bytes.Buffer, note string) {
	if note != "" {
		fmt.Fprintf(b, "%s\n", note)
	}
}
