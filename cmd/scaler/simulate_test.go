package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

func simulate(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := runSimulate(args, &out); err != nil {
		t.Fatalf("simulate %v: %v", args, err)
	}
	return out.String()
}

// TestReportIsCurrent keeps the committed report from going stale.
func TestReportIsCurrent(t *testing.T) {
	const path = "../../docs/decision-quality.md"
	var md, pic bytes.Buffer
	if err := sim.WriteReport(&md, &pic, reportPicture(path)); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{path: md.Bytes(), filepath.Join(filepath.Dir(path), reportPicture(path)): pic.Bytes()} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; regenerate it with: %s", file, sim.ReportCommand)
		}
	}
}

func TestReportFlagWritesBothFiles(t *testing.T) {
	dir := t.TempDir()
	simulate(t, "--report", filepath.Join(dir, "q.md"))
	md, err := os.ReadFile(filepath.Join(dir, "q.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "(q-delay3.svg)") {
		t.Error("the report does not link its picture")
	}
	if pic, err := os.ReadFile(filepath.Join(dir, "q-delay3.svg")); err != nil || !bytes.HasPrefix(pic, []byte("<svg")) {
		t.Errorf("picture: %v", err)
	}
}

// TestTableReproducesReference: `scaler simulate --table` prints the
// reference's first table byte for byte, then the jump test.
func TestTableReproducesReference(t *testing.T) {
	want, err := os.ReadFile("../../pkg/sim/testdata/reference-scan.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := simulate(t, "--table")
	if !strings.HasPrefix(out, string(want)) {
		t.Errorf("got:\n%s\nwant it to start with:\n%s", out, want)
	}
	if !strings.Contains(out, "unadjusted                                  0                      3                      6\n") {
		t.Errorf("no unadjusted jump row in:\n%s", out)
	}
}

func TestSimulateRuns(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"naive at delay 3", []string{"--delay", "3"}, []string{"unadjusted", " 457\n", "reaction 3 turns", "SPEC: θU 18.5 %"}},
		{"naive dampers", []string{"--delay", "3", "--window", "3", "--step", "1"}, []string{"window 3 + step 1", " 385\n"}},
		{"best preset", []string{"--controller", "barometer", "--preset", "best", "--delay", "3"}, []string{"Barometer best", " 330\n"}},
		{"best built from flags", []string{"--controller", "barometer", "--preset", "delay-aware", "--trend-window", "6",
			"--hysteresis", "0.05", "--surge", "--delay", "3"}, []string{" 330\n"}},
		{"hpa with options", []string{"--controller", "hpa", "--hpa-down-window", "0s", "--hpa-tolerance", "0"}, []string{"HPA"}},
		{"another series", []string{"--trace", "seed:1"}, []string{"(seed 1)", "ideal total 303"}},
		{"jump test", []string{"--trace", "jump", "--delay", "6"}, []string{"reaction 6 turns"}},
		{"table of another controller", []string{"--table", "--controller", "hpa"}, []string{"metric delay is scanned (HPA):", "jump test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := simulate(t, tt.args...)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestSimulateJSON(t *testing.T) {
	var got struct {
		Series string
		Delay  int
		Score  sim.Score
		Steps  []sim.Step
	}
	if err := json.Unmarshal([]byte(simulate(t, "--json", "--delay", "3")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Series != "seed 20260805" || got.Delay != 3 || got.Score.Total != 457 || len(got.Steps) != 120 {
		t.Errorf("got %s delay %d total %d, %d steps", got.Series, got.Delay, got.Score.Total, len(got.Steps))
	}
}

func TestSimulateCSVAndSVG(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(csv, []byte("turn,load\n0,800\n1,800\n2,3200\n3,3200\n4,3200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	svgFile := filepath.Join(dir, "run.svg")
	out := simulate(t, "--trace", csv, "--event", "2:5", "--svg", svgFile)
	if !strings.Contains(out, "5 turns, load 800-3200 requests/s (trace.csv)") || !strings.Contains(out, "reaction 0 turns") {
		t.Errorf("output:\n%s", out)
	}
	if pic, err := os.ReadFile(svgFile); err != nil || !bytes.Contains(pic, []byte("supplied replicas")) {
		t.Errorf("svg: %v", err)
	}
}

func TestSimulateErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--controller", "pid"}, `--controller "pid" (allowed: naive, hpa, barometer)`},
		{[]string{"--delay", "-1"}, "--delay (allowed: a whole number >= 0)"},
		{[]string{"--delay", "x"}, `invalid value "x" for flag -delay`},
		{[]string{"--controller", "hpa", "--window", "3"}, "--window applies to --controller naive (this run: hpa)"},
		{[]string{"--surge"}, "--surge applies to --controller barometer (this run: naive)"},
		{[]string{"--table", "--json"}, "--json (allowed: not with --table)"},
		{[]string{"--report", "x.md", "--delay", "3"}, "--report takes no other flag"},
		{[]string{"--occupancy", "1.5"}, "--occupancy (allowed: a number in (0, 1])"},
		{[]string{"--controller", "barometer", "--preset", "fast"}, "--preset (allowed: default, delay-aware or best)"},
		{[]string{"--controller", "hpa", "--hpa-down-percent", "0"}, "--hpa-down-percent (allowed: 1..100)"},
		{[]string{"--event", "9:1"}, `--event "9:1" (allowed: START:END, 0 <= START <= END)`},
		{[]string{"--trace", "seed:x"}, `--trace: "seed:x" (allowed: seed:N`},
		{[]string{"--trace", "/no/such.csv"}, "--trace: open /no/such.csv"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		err := runSimulate(tt.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestSimulateHelp(t *testing.T) {
	out := simulate(t, "-h")
	for _, w := range []string{"usage: scaler simulate", "-trace", "-controller", "-report"} {
		if !strings.Contains(out, w) {
			t.Errorf("help lacks %q", w)
		}
	}
}
