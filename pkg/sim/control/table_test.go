package control

import (
	"os"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDelayScanText reproduces the model's first printout byte for byte.
func TestDelayScanText(t *testing.T) {
	m, s := sim.ReferenceModel(), sim.Reference()
	delays := []int{0, 1, 2, 3, 4, 5, 6}
	var scores []sim.Score
	for _, r := range sim.Scan(sim.Config{Model: m}, s, NaiveSetting("naive", NaiveOptions{}), delays) {
		scores = append(scores, r.Score)
	}
	var b strings.Builder
	if err := sim.WriteModel(&b, m, s); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\nmetric delay is scanned (no wait window and no step limit):\n")
	if err := sim.WriteDelayScan(&b, delays, scores); err != nil {
		t.Fatal(err)
	}
	if want := readGolden(t, "reference-scan.txt"); b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestDamperText reproduces the model's second printout byte for byte.
func TestDamperText(t *testing.T) {
	m := sim.ReferenceModel()
	row := func(name string, delay int, o NaiveOptions) sim.Row {
		return sim.Row{Name: name, Score: sim.Run(sim.Config{Model: m, Delay: delay}, sim.Reference(), NewNaive(m, o)).Score}
	}
	settings := []struct {
		name string
		o    NaiveOptions
	}{
		{"unadjusted", NaiveOptions{}},
		{"wait window 2", NaiveOptions{Window: 2}},
		{"wait window 3", NaiveOptions{Window: 3}},
		{"wait window 5", NaiveOptions{Window: 5}},
		{"wait window 8", NaiveOptions{Window: 8}},
		{"step limit 1", NaiveOptions{Step: 1}},
		{"step limit 2", NaiveOptions{Step: 2}},
		{"window 3 + step 1", NaiveOptions{Window: 3, Step: 1}},
		{"window 5 + step 1", NaiveOptions{Window: 5, Step: 1}},
	}
	var rows []sim.Row
	for _, st := range settings {
		rows = append(rows, row(st.name, 3, st.o))
	}
	var b strings.Builder
	b.WriteString("metric delay held fixed at 3 turns; results from a 120-turn run:\n")
	if err := sim.WriteSettings(&b, rows); err != nil {
		t.Fatal(err)
	}

	jumpDelays := []int{0, 3, 6}
	var jumps []sim.JumpRow
	for _, i := range []int{0, 5, 6, 7} {
		jr := sim.JumpRow{Name: settings[i].name}
		for _, r := range sim.Scan(sim.Config{Model: m}, sim.JumpTest(), NaiveSetting("", settings[i].o), jumpDelays) {
			jr.Reactions = append(jr.Reactions, r.Score.Reaction)
		}
		jumps = append(jumps, jr)
	}
	b.WriteString("\njump test -- reaction turn when load jumps from 800 to 3200 requests/s at turn 60:\n")
	if err := sim.WriteJump(&b, jumpDelays, jumps); err != nil {
		t.Fatal(err)
	}

	b.WriteString("\nthe same two settings with no delay (delay 0):\n")
	var noDelay strings.Builder
	if err := sim.WriteSettings(&noDelay, []sim.Row{row("unadjusted", 0, NaiveOptions{}), row("window 3 + step 1", 0, settings[7].o)}); err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(noDelay.String(), "\n") // the model prints no header here
	b.WriteString(rest)

	if want := readGolden(t, "reference-dampers.txt"); b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
