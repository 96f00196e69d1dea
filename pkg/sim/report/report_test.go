package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/sim"
)

func TestGenerate(t *testing.T) {
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
