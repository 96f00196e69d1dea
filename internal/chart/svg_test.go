package chart

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func render(t *testing.T, f Figure) string {
	t.Helper()
	var b strings.Builder
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteIsWellFormedAndDeterministic(t *testing.T) {
	f := Figure{Title: "a < b & c", XLabel: "turn", YLabel: "replicas", Panels: []Panel{
		{Title: "one", Lines: []Line{
			{Name: "load", Values: []float64{0.5, 2.5, 1}, Color: "#999", Fill: true},
			{Name: "required", Values: []float64{1, 3, 2}, Color: "black", Step: true, Dash: true},
		}},
		{Title: "two", Lines: []Line{{Name: "required", Values: []float64{1, 3, 2}, Color: "black", Step: true}}},
	}}
	out := render(t, f)
	if out != render(t, f) {
		t.Fatal("two renders differ")
	}
	dec := xml.NewDecoder(strings.NewReader(out))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, out)
		}
	}
	for _, want := range []string{"a &lt; b &amp; c", `stroke-dasharray="6 4"`, "<polygon", ">one<", ">two<"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	if got := strings.Count(out, "<polyline"); got != 3 {
		t.Errorf("%d polylines, want 3", got)
	}
	if got := strings.Count(out, ">required<"); got != 1 {
		t.Errorf("legend names required %d times, want once", got)
	}
}

func TestStepDrawsAStaircase(t *testing.T) {
	out := render(t, Figure{Panels: []Panel{{Lines: []Line{{Name: "s", Values: []float64{1, 2, 3}, Step: true}}}}})
	_, pts, _ := strings.Cut(out, `<polyline points="`)
	pts, _, _ = strings.Cut(pts, `"`)
	if got := len(strings.Fields(pts)); got != 5 {
		t.Errorf("%d points, want 5 (3 values, 2 risers): %s", got, pts)
	}
}

func TestNiceStep(t *testing.T) {
	tests := []struct{ span, want float64 }{
		{0, 1}, {5, 1}, {6, 1}, {7, 2}, {12, 2}, {13, 5}, {30, 5}, {31, 10}, {119, 20}, {4000, 1000},
	}
	for _, tt := range tests {
		if got := niceStep(tt.span); got != tt.want {
			t.Errorf("niceStep(%v) = %v, want %v", tt.span, got, tt.want)
		}
	}
}

// TestMarksAndTicks: a mark shades each run of its points once and is
// named in the legend; XTick labels the axis; a legend too wide for one
// row wraps and pushes the panels down.
func TestMarksAndTicks(t *testing.T) {
	f := Figure{Title: "t", Panels: []Panel{{Title: "p", Lines: []Line{{Name: "v", Values: []float64{1, 2, 3, 4, 5}, Color: "black"}}}},
		Marks: []Mark{{Name: "held <gate>", Color: "blue", At: []int{0, 1, 3}}},
		XTick: func(t float64) string { return "-" + fmtf(4-t) + "s" }}
	out := render(t, f)
	if n := strings.Count(out, "<title>held &lt;gate&gt;</title>"); n != 2 {
		t.Errorf("%d bands, want 2 (points 0-1 and 3)\n%s", n, out)
	}
	for _, want := range []string{">held &lt;gate&gt;</text>", ">-4s<", ">-0s<"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q\n%s", want, out)
		}
	}
	one := render(t, Figure{Panels: f.Panels})
	var lines []Line
	for range 12 {
		lines = append(lines, Line{Name: "a series with a long name", Values: []float64{1}, Color: "black"})
		lines[len(lines)-1].Name += strings.Repeat("x", len(lines))
	}
	wide := render(t, Figure{Panels: []Panel{{Lines: lines}}})
	if !strings.Contains(wide, `y="64"`) || strings.Contains(one, `y="64"`) {
		t.Errorf("a wide legend does not wrap onto a second row")
	}
}
