package sim

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// provenanceRow is one row of PROVENANCE.md's table.
type provenanceRow struct {
	step       time.Duration
	turns      int
	peak       float64
	saturation float64
}

var provenanceLine = regexp.MustCompile("^\\| `([^`]+\\.csv)` \\| (\\d+) \\| (\\d+) \\| [^|]+ \\| ([0-9.]+) \\| ([0-9.]+) \\|$")

func readProvenance(t *testing.T) map[string]provenanceRow {
	t.Helper()
	data, err := os.ReadFile("testdata/traces/PROVENANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]provenanceRow{}
	for line := range strings.SplitSeq(string(data), "\n") {
		m := provenanceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		step, _ := strconv.Atoi(m[2])
		turns, _ := strconv.Atoi(m[3])
		peak, _ := strconv.ParseFloat(m[4], 64)
		sat, _ := strconv.ParseFloat(m[5], 64)
		rows[m[1]] = provenanceRow{time.Duration(step) * time.Second, turns, peak, sat}
	}
	return rows
}

// TestRealTracesMatchProvenance holds the three statements of a trace
// together: the files in testdata/traces, the index RealTraces, and the
// table of PROVENANCE.md (step, length, peak and the peak-24 saturation).
func TestRealTracesMatchProvenance(t *testing.T) {
	files, err := filepath.Glob("testdata/traces/*.csv")
	if err != nil {
		t.Fatal(err)
	}
	prov := readProvenance(t)
	var indexed []string
	for _, rt := range RealTraces() {
		indexed = append(indexed, rt.File)
		row, ok := prov[rt.File]
		if !ok {
			t.Errorf("%s: no row in PROVENANCE.md", rt.File)
			continue
		}
		s, err := rt.Load()
		if err != nil {
			t.Errorf("%s: %v", rt.File, err)
			continue
		}
		if len(s.Load) != rt.Turns || row.turns != rt.Turns {
			t.Errorf("%s: %d counts, index says %d, PROVENANCE.md %d", rt.File, len(s.Load), rt.Turns, row.turns)
		}
		if row.step != rt.Step {
			t.Errorf("%s: step %v in the index, %v in PROVENANCE.md", rt.File, rt.Step, row.step)
		}
		// The file's own header states its step too.
		if want := "# step " + strconv.Itoa(int(rt.Step.Seconds())) + "s per turn"; !strings.Contains(mustRead(t, "testdata/traces/"+rt.File), want) {
			t.Errorf("%s: header lacks %q", rt.File, want)
		}
		top, positive := 0.0, 0
		for i, l := range s.Load {
			if l < 0 || l != float64(int64(l)) {
				t.Errorf("%s turn %d: %v is not a count", rt.File, i, l)
			}
			top = max(top, l)
			if l > 0 {
				positive++
			}
		}
		if positive == 0 || top != row.peak {
			t.Errorf("%s: %d non-zero counts, peak %v (PROVENANCE.md %v)", rt.File, positive, top, row.peak)
		}
		if m := PeakModel(s, 0.7, 24); m.Saturation != row.saturation {
			t.Errorf("%s: peak-24 saturation %v, PROVENANCE.md %v", rt.File, m.Saturation, row.saturation)
		}
	}
	for _, f := range files {
		if !slices.Contains(indexed, filepath.Base(f)) {
			t.Errorf("%s is not in RealTraces()", f)
		}
	}
	if len(prov) != len(indexed) {
		t.Errorf("PROVENANCE.md has %d rows, RealTraces() %d traces", len(prov), len(indexed))
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestRealTracesCoverACycle: at least one trace spans two weeks, so a
// daily and weekly cycle can be learnt, and at least one is per minute or
// finer over a day or more.
func TestRealTracesCoverACycle(t *testing.T) {
	var weeks, fineDay bool
	for _, rt := range RealTraces() {
		span := time.Duration(rt.Turns) * rt.Step
		weeks = weeks || span >= 14*24*time.Hour
		fineDay = fineDay || (rt.Step <= time.Minute && span >= 24*time.Hour)
	}
	if !weeks || !fineDay {
		t.Errorf("two weeks or more: %v; a day or more per minute or finer: %v", weeks, fineDay)
	}
}

func TestPeakModelPutsThePeakAtExactlyPeakReplicas(t *testing.T) {
	// target x peak is rarely exact in binary: these cases include peaks
	// where the plain division leaves the top a hair above peak replicas
	// (0.6/7/7, 0.7/10/11, 0.6/30/3) and where it does not.
	cases := []struct {
		target float64
		peak   int
		top    float64
	}{{0.7, 24, 405}, {0.7, 24, 656}, {0.6, 7, 7}, {0.7, 10, 11}, {0.7, 7, 61}, {0.6, 30, 3}, {0.7, 24, 1e6 + 1}}
	for _, c := range cases {
		s := Series{Load: []float64{c.top / 3, c.top, 0}}
		m := PeakModel(s, c.target, c.peak)
		if got := m.Required(c.top); got != c.peak {
			t.Errorf("%+v: the peak requires %d replicas (saturation %v)", c, got, m.Saturation)
		}
		if m.Required(c.top*1.0001) != c.peak+1 {
			t.Errorf("%+v: a little more than the peak should need one more", c)
		}
		if m.MinReplicas != 1 || m.MaxReplicas != 2*c.peak || m.InitialReplicas != m.Required(c.top/3) {
			t.Errorf("%+v: model %+v", c, m)
		}
	}
	if m := PeakModel(Series{Load: []float64{0, 0}}, 0.7, 24); m.Saturation != 1 || m.InitialReplicas != 1 {
		t.Errorf("no load: %+v", m)
	}
}
