package command

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/report"
)

func simulate(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := Simulate(args, &out); err != nil {
		t.Fatalf("simulate %v: %v", args, err)
	}
	return out.String()
}

// TestReportIsCurrent keeps the committed report and its pictures from
// going stale, through the --report flag: it writes every file beside
// the report it is given, and each must equal the committed one. The
// report runs every controller on seven real traces and 140 generated
// series at seven delays, tuning the baseline for each, which takes
// minutes under the race detector: under -race the test is skipped, and
// .ci/run runs it without.
func TestReportIsCurrent(t *testing.T) {
	if raceEnabled {
		t.Skip("the report takes minutes under -race; .ci/run checks it without: go test -run TestReportIsCurrent ./pkg/sim/command")
	}
	const committed = "../../../docs"
	dir := t.TempDir()
	simulate(t, "--report", filepath.Join(dir, "decision-quality.md"))
	refPic, queuePic := report.Pictures("decision-quality.md")
	for _, name := range []string{"decision-quality.md", refPic, queuePic} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("--report did not write %s: %v", name, err)
		}
		want, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; regenerate it with: %s", name, report.Command)
		}
	}
}

// TestTableReproducesReference: `scaler simulate --table` prints the
// metric-delay model's first table byte for byte, then the jump test.
func TestTableReproducesReference(t *testing.T) {
	want, err := os.ReadFile("../testdata/reference-scan.txt")
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
		{"default profile, deployed", []string{"--controller", "barometer", "--delay", "3"}, []string{"Barometer budgeted, deployed, recommended behavior", " 525\n"}},
		{"default profile, raw signal", []string{"--controller", "barometer", "--delay", "3", "--raw-signal"}, []string{"Barometer budgeted, raw signal", " 532\n"}},
		{"default profile, Kubernetes default behavior", []string{"--controller", "barometer", "--delay", "3", "--hpa-default-behavior"},
			[]string{"Barometer budgeted, deployed, Kubernetes default behavior", " 551\n"}},
		{"flash crowd, raw signal", []string{"--controller", "barometer", "--trace", "flash-crowd", "--raw-signal"}, []string{"Barometer budgeted, raw signal ", " 1                      1                    240\n"}},
		{"flash crowd, raw signal, working set", []string{"--controller", "barometer", "--trace", "flash-crowd", "--raw-signal", "--working-set"},
			[]string{"Barometer budgeted, working set, raw signal ", " 0                      0                    238\n"}},
		{"compare, working set", []string{"--compare", "--working-set"}, []string{"Barometer, profile budgeted (default), working set, deployed, recommended behavior "}},
		{"responsive, raw signal", []string{"--controller", "barometer", "--profile", "responsive", "--delay", "3", "--raw-signal"}, []string{"Barometer responsive, raw signal", " 332\n"}},
		{"original profile", []string{"--controller", "barometer", "--profile", "original", "--delay", "3", "--raw-signal"}, []string{"Barometer original, raw signal", " 398\n"}},
		{"responsive built from flags", []string{"--controller", "barometer", "--profile", "original", "--ewma-half-life", "0",
			"--scale-in-gate-window", "0", "--resource-scale-in-threshold", "1", "--lead-window", "7", "--lead-significance", "2",
			"--scale-in-hysteresis", "0.05", "--scale-in-noise-margin", "2.5", "--saturation-surge", "--delay", "3", "--raw-signal"}, []string{" 332\n"}},
		{"responsive without its lead", []string{"--controller", "barometer", "--profile", "responsive", "--lead-window", "0", "--delay", "3"},
			[]string{"Barometer responsive, deployed, recommended behavior"}},
		{"maxhold", []string{"--controller", "maxhold", "--delay", "3"},
			[]string{"maxhold tuned on this trace at delay 3 over W 1..15, h 0..30 (", "\nmaxhold, tuned: W=", "short in "}},
		{"maxhold's table", []string{"--controller", "maxhold", "--delay", "3", "--table"},
			[]string{"maxhold tuned on this trace at delay 3", "metric delay is scanned (maxhold, tuned: W=", "jump test"}},
		{"kpa", []string{"--controller", "kpa", "--delay", "3"}, []string{"KPA", " 307\n"}},
		{"kpa with options", []string{"--controller", "kpa", "--kpa-stable-window", "30s", "--kpa-panic-threshold", "3"}, []string{"KPA"}},
		{"naive step limit as --step", []string{"--delay", "3", "--window", "3", "--step", "1"}, []string{" 385\n"}},
		{"a family", []string{"--trace", "family:plateau-and-drop:3"}, []string{"(plateau and drop (seed 3))"}},
		{"compare", []string{"--compare", "--delay", "3"}, []string{"KPA, Knative defaults", "\nmaxhold, tuned: W=", "maxhold tuned on this trace at delay 3",
			"Barometer, profile original, deployed, recommended behavior ", "Barometer, profile budgeted (default), deployed, recommended behavior ",
			"Barometer, profile responsive, deployed, recommended behavior ", "fully_elastic"}},
		{"compare, raw signal", []string{"--compare", "--delay", "3", "--raw-signal"}, []string{"Barometer, profile budgeted (default), raw signal ", "Barometer, profile original, raw signal "}},
		{"compare, Kubernetes default behavior", []string{"--compare", "--hpa-default-behavior"}, []string{"Barometer, profile responsive, deployed, Kubernetes default behavior "}},
		{"hpa with options", []string{"--controller", "hpa", "--hpa-down-window", "0s", "--hpa-tolerance", "0"}, []string{"HPA"}},
		{"another series", []string{"--trace", "seed:1"}, []string{"(seed 1)", "ideal total 303"}},
		{"jump test", []string{"--trace", "jump", "--delay", "6"}, []string{"reaction 6 turns"}},
		{"table of another controller", []string{"--table", "--controller", "hpa"}, []string{"metric delay is scanned (HPA):", "jump test"}},
		{"queue policy", []string{"--controller", "queue", "--delay", "3"}, []string{"\nqueue ", " 356\n"}},
		{"queue policy options", []string{"--controller", "queue", "--target-utilization", "0.75", "--drain-time", "1m",
			"--max-step-up", "2", "--max-step-up-ratio", "0.5", "--max-step-down", "2", "--stabilization-window", "30s",
			"--scale-down-cooldown", "15s", "--ewma-alpha", "0.5", "--default-service-time", "2s", "--rate-cutoff", "0.1"}, []string{"\nqueue "}},
		{"queue policy, current replicas", []string{"--controller", "queue", "--current-replicas", "--delay", "3"}, []string{" 326\n"}},
		{"fully_elastic", []string{"--controller", "fully_elastic", "--delay", "3", "--launch-ttl", "75s"}, []string{"fully_elastic", " 302\n"}},
		{"queue policy, launch TTL covering the delay", []string{"--controller", "queue", "--delay", "3", "--launch-ttl", "75s"}, []string{" 326\n"}},
		{"max_count", []string{"--controller", "max_count", "--delay", "3"}, []string{"max_count", " 304\n"}},
		{"pool_with_threshold", []string{"--controller", "pool_with_threshold", "--threshold", "0.9", "--threshold-low", "0.2", "--ticks", "1"}, []string{"pool_with_threshold"}},
		{"fixed", []string{"--controller", "fixed", "--min-replicas", "2", "--initial-replicas", "3"}, []string{"fixed", " 360\n"}},
		{"queue trace", []string{"--trace", "queue", "--controller", "queue", "--delay", "3"},
			[]string{"queue trace: 120 turns (queue trace (seed 6))", "saturation 1 per replica", " 866\n", "queue: backlog turns 11,"}},
		{"another queue trace", []string{"--trace", "queue:7"}, []string{"(queue trace (seed 7))", "queue: backlog turns"}},
		{"a policy's table on the queue trace", []string{"--table", "--trace", "queue", "--controller", "fully_elastic"},
			[]string{"metric delay is scanned (fully_elastic):", "ideal total 521", "\nfully_elastic                               2                     11                     20\n"}},
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

func TestCompareDrawsEveryRun(t *testing.T) {
	pic := filepath.Join(t.TempDir(), "all.svg")
	out := simulate(t, "--compare", "--delay", "3", "--lead-window", "0", "--kpa-panic-threshold", "3", "--svg", pic)
	data, err := os.ReadFile(pic)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "KPA, Knative defaults: total", "maxhold, tuned: W=", "Barometer, profile original, deployed, recommended behavior: total", "fixed: total"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the picture lacks %q", want)
		}
	}
	if !strings.Contains(out, "Barometer, profile budgeted (default), deployed, recommended behavior") {
		t.Errorf("table:\n%s", out)
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

func TestSimulateQueueCSV(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "q.csv")
	if err := os.WriteFile(csv, []byte("turn,arrivals,serviceSeconds\n0,10,2\n1,40,2\n2,10,2\n3,10,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := simulate(t, "--trace", csv, "--controller", "queue", "--event", "1:3")
	for _, want := range []string{"queue trace: 4 turns (q.csv), 10-40 items per turn", "required replicas 2-8, ideal total 14", "reaction 1 turns", "queue: backlog turns 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("0,10,2\n1,10,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Simulate([]string{"--trace", bad}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "bad.csv line 2: serviceSeconds 0") {
		t.Errorf("err = %v", err)
	}
}

func TestSimulateErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--controller", "pid"}, `--controller "pid" (allowed: naive, hpa, kpa, maxhold, barometer, queue, fixed, fully_elastic, max_count, pool_with_threshold)`},
		{[]string{"--delay", "-1"}, "--delay (allowed: a whole number >= 0)"},
		{[]string{"--delay", "x"}, `invalid value "x" for flag -delay`},
		{[]string{"--controller", "hpa", "--window", "3"}, "--window applies to --controller naive (this run: hpa)"},
		{[]string{"--saturation-surge"}, "--saturation-surge applies to --controller barometer (this run: naive)"},
		{[]string{"--table", "--json"}, "--json (allowed: not with --table)"},
		{[]string{"--report", "x.md", "--delay", "3"}, "--report takes no other flag"},
		{[]string{"--occupancy", "1.5"}, "--occupancy (allowed: a number in (0, 1])"},
		{[]string{"--controller", "barometer", "--profile", "fast"}, "--profile fast (allowed: one of budgeted, responsive, original)"},
		{[]string{"--controller", "barometer", "--raw-signal", "--hpa-default-behavior"}, "--hpa-default-behavior (allowed: not with --raw-signal"},
		{[]string{"--controller", "hpa", "--raw-signal"}, "--raw-signal applies to --controller barometer (this run: hpa)"},
		{[]string{"--controller", "naive", "--working-set"}, "--working-set applies to --controller barometer (this run: naive)"},
		{[]string{"--controller", "maxhold", "--hpa-default-behavior"}, "--hpa-default-behavior applies to --controller barometer (this run: maxhold)"},
		{[]string{"--controller", "barometer", "--lead-window", "2"}, "--lead-window 2 (allowed: 0 (no lead) or a whole number from 3 to 16)"},
		{[]string{"--controller", "barometer", "--scale-in-hysteresis", "2"}, "--scale-in-hysteresis 2 (allowed: a number in [0, 1])"},
		{[]string{"--lead-window", "6"}, "--lead-window applies to --controller barometer (this run: naive)"},
		{[]string{"--kpa-panic-threshold", "3"}, "--kpa-panic-threshold applies to --controller kpa (this run: naive)"},
		{[]string{"--controller", "hpa", "--step", "1"}, "--step (allowed: a duration with --from-prometheus"},
		{[]string{"--step", "30s"}, "--step as a duration applies to --from-prometheus"},
		{[]string{"--compare", "--controller", "hpa"}, "--compare runs every controller"},
		{[]string{"--compare", "--window", "3"}, "--window does not apply to --compare"},
		{[]string{"--compare", "--profile", "original"}, "--profile does not apply to --compare"},
		{[]string{"--trace", "family:square:1"}, `--trace: "family:square:1" (allowed: family:NAME:N with NAME one of plateau-and-drop`},
		{[]string{"--query", "up"}, "--query applies to --from-prometheus"},
		{[]string{"--from-prometheus", "http://p.svc:9090"}, "--query (allowed: the PromQL of the load"},
		{[]string{"--from-prometheus", "http://p.svc:9090", "--query", "up", "--start", "x", "--end", "1"}, `--start "x" (allowed: RFC 3339 or Unix seconds)`},
		{[]string{"--from-prometheus", "http://p.svc:9090", "--query", "up", "--start", "10", "--end", "5"}, `--end "5" (allowed: after --start)`},
		{[]string{"--from-prometheus", "http://p.svc:9090", "--query", "up", "--start", "0", "--end", "1000000", "--step", "1s"}, "--step 1s (allowed: fewer than 11000 steps"},
		{[]string{"--from-prometheus", "ftp://p.svc", "--query", "up", "--start", "0", "--end", "60"}, `--from-prometheus "ftp://p.svc" (allowed: an http or https URL`},
		{[]string{"--from-prometheus", "http://evil.example:9090", "--query", "up", "--start", "0", "--end", "60"}, `--from-prometheus "http://evil.example:9090": `},
		{[]string{"--from-prometheus", "http://p.svc:9090", "--trace", "jump", "--query", "up", "--start", "0", "--end", "60"}, "--trace: not with --from-prometheus"},
		{[]string{"--controller", "hpa", "--hpa-down-percent", "0"}, "--hpa-down-percent (allowed: 1..100)"},
		{[]string{"--event", "9:1"}, `--event "9:1" (allowed: START:END, 0 <= START <= END)`},
		{[]string{"--trace", "seed:x"}, `--trace: "seed:x" (allowed: seed:N`},
		{[]string{"--trace", "/no/such.csv"}, "--trace: open /no/such.csv"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--controller", "queue", "--drain-time", "0s"}, "--drain-time 0s (allowed: a duration > 0 such as 30s or 2m, at most 24h0m0s)"},
		{[]string{"--controller", "queue", "--target-utilization", "1.5"}, "--target-utilization 1.5 (allowed: a number in (0, 1])"},
		{[]string{"--controller", "pool_with_threshold", "--threshold", "0.2"}, "--threshold-low 0.3 (allowed: a number in [0, 0.2])"},
		{[]string{"--controller", "fully_elastic", "--launch-ttl", "0s"}, "--launch-ttl 0s (allowed: a duration > 0 such as 30s or 2m, at most 24h0m0s)"},
		{[]string{"--launch-ttl", "30s"}, "--launch-ttl applies to --controller queue, fixed, fully_elastic, max_count, pool_with_threshold (this run: naive)"},
		{[]string{"--controller", "fixed", "--threshold", "0.5"}, "--threshold applies to --controller pool_with_threshold (this run: fixed)"},
		{[]string{"--controller", "queue", "--window", "3"}, "--window applies to --controller naive (this run: queue)"},
		{[]string{"--trace", "queue:0"}, `--trace: "queue:0" (allowed: queue:N`},
		{[]string{"--min-replicas", "0"}, "--min-replicas (allowed: a whole number >= 1)"},
		{[]string{"--min-replicas", "3", "--initial-replicas", "2"}, "--initial-replicas (allowed: --min-replicas..--max-replicas)"},
	}
	for _, tt := range tests {
		err := Simulate(tt.args, &bytes.Buffer{})
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
