package sim

import (
	"slices"
	"testing"
)

// The numbers below are the metric-delay model's printed tables
// (docs/semantics.md, "Metric delay"; testdata/reference-*.txt).

func TestReferenceSeriesSummary(t *testing.T) {
	s, m := Reference(), ReferenceModel()
	if got := len(s.Load); got != 120 {
		t.Fatalf("turns = %d, want 120", got)
	}
	lo, hi := slices.Min(s.Load), slices.Max(s.Load)
	if lo != 278 || hi != 3915 {
		t.Errorf("load range = %v-%v, want 278-3915", lo, hi)
	}
	minReq, maxReq, ideal := 99, 0, 0
	for _, l := range s.Load {
		r := m.Required(l)
		minReq, maxReq, ideal = min(minReq, r), max(maxReq, r), ideal+r
	}
	if minReq != 1 || maxReq != 5 || ideal != 301 {
		t.Errorf("required %d-%d, ideal %d; want 1-5, ideal 301", minReq, maxReq, ideal)
	}
}
