package sim

import (
	"slices"
	"strings"
	"testing"
)

func TestReadCSV(t *testing.T) {
	tests := []struct {
		name, in string
		want     []float64
		err      string
	}{
		{"one per line", "100\n200.5\n\n300\n", []float64{100, 200.5, 300}, ""},
		{"turn,load with header and comment", "turn,load\n# a comment\n0,100\n1, 250\n", []float64{100, 250}, ""},
		{"turn out of order", "0,100\n2,200\n", nil, "line 2: turn 2 out of order (want 1)"},
		{"negative load", "100\n-1\n", nil, "line 2: load -1 (allowed: a finite number >= 0)"},
		{"not a number after the first line", "100\nabc\n", nil, `line 2: "abc" is not a number`},
		{"too many fields", "0,1,2\n", nil, "line 1: 3 fields (allowed: load, or turn,load)"},
		{"empty", "# nothing\n", nil, "no load values"},
		{"infinite", "100\ninf\n", nil, "line 2: load +Inf"},
		{"NaN", "100\nNaN\n", nil, "line 2: load NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ReadCSV(strings.NewReader(tt.in), "trace.csv")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Load, tt.want) || s.Name != "trace.csv" {
				t.Errorf("got %v %q, want %v", s.Load, s.Name, tt.want)
			}
		})
	}
}
