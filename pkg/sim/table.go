package sim

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The tables below reproduce the metric-delay model's text layout (its
// padEnd/padStart widths), so a run can be compared with its printed tables
// (testdata/reference-*.txt; docs/semantics.md, "The tables and the jump
// test") by eye.

// Row is one named line of a settings table.
type Row struct {
	Name  string
	Score Score
}

// JumpRow is one setting's reaction turns at a list of delays.
type JumpRow struct {
	Name      string
	Reactions []int
}

// WriteModel writes the model's two summary lines for a series.
func WriteModel(w io.Writer, m Model, s Series) error {
	var b strings.Builder
	lo, hi := 0.0, 0.0
	minReq, maxReq := 0, 0
	if len(s.Load) > 0 {
		lo, hi = slices.Min(s.Load), slices.Max(s.Load)
		minReq, maxReq = m.Required(lo), m.Required(hi)
	}
	if q := s.Queue; q != nil && len(q.Arrivals) > 0 {
		fmt.Fprintf(&b, "queue trace: %d turns (%s), %s-%s items per turn, %s-%s s of service per item; work waits\n",
			len(q.Arrivals), s.Name, num(slices.Min(q.Arrivals)), num(slices.Max(q.Arrivals)), num(slices.Min(q.Service)), num(slices.Max(q.Service)))
	}
	if s.Queue != nil {
		fmt.Fprintf(&b, "model: load %.4g-%.4g (arrivals x service x saturation / turn); saturation %s per replica, target occupancy %s%%\n",
			lo, hi, num(m.Saturation), num(m.Target*100))
	} else {
		fmt.Fprintf(&b, "model: %d turns, load %s-%s requests/s (%s); %s requests/s per replica, target occupancy %s%%\n",
			len(s.Load), num(lo), num(hi), s.Name, num(m.Saturation), num(m.Target*100))
	}
	fmt.Fprintf(&b, "required replicas %d-%d, ideal total %d replica-turns\n", minReq, maxReq, m.Ideal(s.Load))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDelayScan writes the delay-scan table.
func WriteDelayScan(w io.Writer, delays []int, scores []Score) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s%17s%17s%23s%17s%22s%16s\n", "delay", "changes", "oscillation",
		"excess replica-turns", "shortfall turns", "total replica-turns", "peak replicas")
	for i, o := range scores {
		fmt.Fprintf(&b, "%-10d%17d%17d%23d%17d%22d%16d\n", delays[i], o.Changes, o.Oscillation,
			o.Excess, o.Shortfall, o.Total, o.Peak)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSettings writes the damper table.
func WriteSettings(w io.Writer, rows []Row) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s%23s%23s%23s%23s%23s%23s\n", "setting", "changes", "oscillation",
		"excess replica-turns", "shortfall turns", "shortfall in jump", "total replica-turns")
	for _, r := range rows {
		o := r.Score
		fmt.Fprintf(&b, "%-22s%23d%23d%23d%23d%23d%23d\n", r.Name, o.Changes, o.Oscillation,
			o.Excess, o.Shortfall, o.JumpShortfall, o.Total)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJump writes the jump-test table.
func WriteJump(w io.Writer, delays []int, rows []JumpRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s", "setting")
	for _, d := range delays {
		fmt.Fprintf(&b, "%23s", "delay "+strconv.Itoa(d))
	}
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-22s", r.Name)
		for _, v := range r.Reactions {
			fmt.Fprintf(&b, "%23d", v)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// num prints a number the way JavaScript's String does for these values.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
