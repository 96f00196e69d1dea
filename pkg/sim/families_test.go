package sim

import (
	"slices"
	"testing"
)

func TestFamiliesAreDeterministicAndDistinct(t *testing.T) {
	m := ReferenceModel()
	fams := Families()
	if len(fams) < 6 {
		t.Fatalf("%d families, want at least 6", len(fams))
	}
	for _, f := range fams {
		seen := map[string]bool{}
		for seed := int64(1); seed <= FamilySeeds; seed++ {
			a, b := f.Series(seed), f.Series(seed)
			if !slices.Equal(a.Load, b.Load) {
				t.Fatalf("%s seed %d: two runs differ", f.Name, seed)
			}
			if len(a.Load) != familyTurns {
				t.Fatalf("%s seed %d: %d turns", f.Name, seed, len(a.Load))
			}
			key := string(rune(int(a.Load[0]))) + string(rune(int(a.Load[60])))
			if seen[key] {
				t.Errorf("%s seed %d repeats another seed", f.Name, seed)
			}
			seen[key] = true
			for i, l := range a.Load {
				if !(l > 0) || m.Required(l) > m.MaxReplicas {
					t.Fatalf("%s seed %d turn %d: load %v (required %d)", f.Name, seed, i, l, m.Required(l))
				}
			}
			if a.HasEvent() && (a.EventStart < 0 || a.EventEnd > familyTurns) {
				t.Errorf("%s seed %d: event %d..%d", f.Name, seed, a.EventStart, a.EventEnd)
			}
		}
	}
}
