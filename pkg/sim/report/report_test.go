package report

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/control"
)

// TestGenerate: the report names its pictures, has every section, and
// the pictures are SVG. It takes minutes under -race (every controller on
// the real traces and the families, the baseline tuned for each), so it
// is skipped there; .ci/run runs it without, and
// TestRealTracesScoreTheSameSideBySide runs the report's goroutines under
// the race detector on the short traces.
func TestGenerate(t *testing.T) {
	if raceEnabled {
		t.Skip("the report takes minutes under -race; .ci/run runs it without: go test -run TestGenerate ./pkg/sim/report")
	}
	files, err := Generate("q.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "q.md q-delay3.svg q-queue-delay3.svg" {
		t.Fatalf("files %s", got)
	}
	md := string(files[0].Data)
	for _, want := range []string{
		"(q-delay3.svg)", "(q-queue-delay3.svg)",
		"### queue\n", "### fully_elastic\n", "### max_count\n", "### pool_with_threshold\n", "### fixed\n",
		"### The replica count the policies see, at delay 3", "## The queue trace\n", "### Every controller at delay 3",
		"## The goals (the default profile, budgeted, scored as deployed)", "### At delay 3, start-up 0", "### At delay 6, start-up 0", "### At delay 3, start-up 2 turns", "### Judged at equal shortfall", "### The tuned baseline, tuned in advance", "### The jump test",
		"## The real traces, delays 0..6", "| maxhold's pick |", "| Barometer, profile budgeted (default), raw signal |",
		"### maxhold, tuned\n", "### Barometer, profile budgeted (default), deployed, recommended behavior\n",
		"### Barometer, profile responsive, deployed, recommended behavior\n", "### Barometer, profile original, deployed, recommended behavior\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	for _, f := range files[1:] {
		if !bytes.HasPrefix(f.Data, []byte("<svg")) {
			t.Errorf("%s is not an SVG", f.Name)
		}
	}
}

// TestQueueChartIsCut: values above the ceiling are drawn at it, the rest
// as they are.
func TestQueueChartIsCut(t *testing.T) {
	res := sim.Result{Steps: []sim.Step{{Load: 30, Required: 35, Ready: 12}, {Load: 1, Required: 2, Ready: 2}}}
	f := queueChart([]sim.Named{{Name: "run", Result: res}})
	want := map[string][]float64{
		"load (replicas at target)": {queueCeiling, 1 / 0.7},
		"required replicas":         {queueCeiling, 2},
		"supplied replicas":         {12, 2},
	}
	for _, l := range f.Panels[0].Lines {
		if !slices.Equal(l.Values, want[l.Name]) {
			t.Errorf("%s: %v, want %v", l.Name, l.Values, want[l.Name])
		}
	}
}

// TestRealTracesScoreTheSameSideBySide runs the real traces' scoring, one
// goroutine per trace as the report does, twice at once on the two short
// traces: under -race it finds any state the runs share, and the two
// results must be the same. Each Barometer row says how it was scored,
// and the tuned baseline's scores are its picks'.
func TestRealTracesScoreTheSameSideBySide(t *testing.T) {
	var short []sim.RealTrace
	for _, rt := range sim.RealTraces() {
		if rt.Turns < 500 {
			short = append(short, rt)
		}
	}
	if len(short) < 2 {
		t.Fatalf("%d short traces, want 2", len(short))
	}
	sets := realSettings()
	var runs [2][]realRuns
	var errs [2]error
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { runs[i], errs[i] = scoreRealTraces(short, sets) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range short {
		a, b := runs[0][i], runs[1][i]
		if !reflect.DeepEqual(a.scores, b.scores) || !reflect.DeepEqual(a.tunings, b.tunings) {
			t.Errorf("%s: two runs side by side differ", short[i].File)
		}
		if !reflect.DeepEqual(a.frontiers, b.frontiers) {
			t.Errorf("%s: two runs' frontiers differ", short[i].File)
		}
		for u, tunings := range a.tunings {
			for d, tuning := range tunings {
				if a.scores[u][reportMaxHold][d] != tuning.Score {
					t.Errorf("%s start-up %d delay %d: the baseline scored %+v, its pick %+v", short[i].File, reportStartups[u], reportDelays[d], a.scores[u][reportMaxHold][d], tuning.Score)
				}
			}
		}
	}
	for _, i := range []int{reportOriginal, reportResponsive, reportDefault} {
		if !strings.HasSuffix(sets[i].Name, ", deployed, recommended behavior") {
			t.Errorf("%s does not say it is scored as deployed", sets[i].Name)
		}
	}
	if !strings.HasSuffix(sets[reportRaw].Name, ", raw signal") {
		t.Errorf("%s does not say it is the raw signal", sets[reportRaw].Name)
	}
}

// TestHalvesTradeTheirTunings: each half of a trace is run by the
// baseline tuned on the other half, and that run is the baseline's own
// run with those options on the half.
func TestHalvesTradeTheirTunings(t *testing.T) {
	s := sim.Reference()
	m := sim.ReferenceModel()
	halves := scoreHalves(s, m, sim.DefaultTurn, settings()[reportDefault])
	if halves[0].from != 0 || halves[0].to != len(s.Load)/2 || halves[1].from != halves[0].to || halves[1].to != len(s.Load) {
		t.Fatalf("halves %+v", halves)
	}
	for i, h := range halves {
		if h.advance.Options != halves[1-i].hindsight.Options {
			t.Errorf("half %d was run with %+v, tuned on the other half as %+v", i, h.advance.Options, halves[1-i].hindsight.Options)
		}
		p := s
		p.Load, p.EventStart, p.EventEnd = s.Load[h.from:h.to], 0, 0
		pm := m
		pm.InitialReplicas = m.Required(p.Load[0])
		cfg := sim.Config{Model: pm, Delay: goalDelay, Turn: sim.DefaultTurn}
		if want := sim.Run(cfg, p, control.NewMaxHold(pm, h.advance.Options)).Score; h.inAdvance != want {
			t.Errorf("half %d in advance: %+v, the baseline's own run %+v", i, h.inAdvance, want)
		}
	}
}
