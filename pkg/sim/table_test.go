package sim

import (
	"os"
	"strings"
	"testing"
)

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReferenceSeriesValues compares every load with the metric-delay
// model's own output (testdata/reference-series.txt, one per line).
func TestReferenceSeriesValues(t *testing.T) {
	want := strings.Fields(readGolden(t, "reference-series.txt"))
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
