package sim

import (
	"os"
	"strings"
	"testing"
)

// TestReferenceSeriesValues compares every load with the metric-delay
// model's own output (testdata/reference-series.txt, one per line).
func TestReferenceSeriesValues(t *testing.T) {
	b, err := os.ReadFile("testdata/reference-series.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(b))
	got := Reference().Load
	if len(got) != len(want) {
		t.Fatalf("%d loads, want %d", len(got), len(want))
	}
	for i, w := range want {
		if num(got[i]) != w {
			t.Errorf("turn %d: load %v, want %s", i, got[i], w)
		}
	}
}
