// Package chart writes small, deterministic line charts as SVG: stacked
// panels over a shared x axis (turns) and a shared y scale, with a legend.
package chart

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Line is one series in a panel.
type Line struct {
	Name   string
	Values []float64
	Color  string
	// Step draws a staircase (for counts); otherwise points are joined.
	Step bool
	// Dash draws the line dashed; Fill shades the area under it.
	Dash, Fill bool
	// Lower, when set, shades the band between it and Values (a range,
	// such as the lowest and highest of a bucket of samples).
	Lower []float64
}

// Panel is one chart; all panels share the x and y scales.
type Panel struct {
	Title string
	Lines []Line
}

// Mark shades the points at the indices At in every panel, one band per
// run of consecutive indices, and is named in the legend.
type Mark struct {
	Name, Color string
	At          []int
}

// Figure is the whole picture.
type Figure struct {
	Title          string
	XLabel, YLabel string
	Panels         []Panel
	// Marks shade points under the lines (the samples a rule acted on).
	Marks []Mark
	// XTick labels the x axis at point t; nil prints t.
	XTick func(t float64) string
	// X places the points on the x axis (ascending, one per point); nil
	// spaces them evenly. Ticks, when set, are the x axis's labels, at
	// positions of X, instead of XTick's.
	X     []float64
	Ticks []Tick
	// FillWidth scales the figure to its container's width (a page),
	// rather than drawing it 960 pixels wide (a file).
	FillWidth bool
}

// Tick is a labelled position of the x axis.
type Tick struct {
	At    float64
	Label string
}

const (
	width       = 960.0
	left, right = 56.0, 16.0
	top         = 76.0 // title, legend and the first panel's title
	panelHeight = 150.0
	gap         = 42.0 // between panels: the x tick labels and the next title
	legendRow   = 18.0 // a legend too wide for one row wraps
)

// Write renders the figure.
func (f Figure) Write(w io.Writer) error {
	n, ymax := 0, 0.0
	for _, p := range f.Panels {
		for _, l := range p.Lines {
			n = max(n, len(l.Values))
			for _, v := range l.Values {
				ymax = max(ymax, v)
			}
		}
	}
	ystep := niceStep(ymax)
	ytop := math.Max(ystep, math.Ceil(ymax/ystep)*ystep)
	var legend strings.Builder
	top := top + legendRow*float64(f.legend(&legend)-1)
	height := top + float64(len(f.Panels))*(panelHeight+gap) + 8

	var b strings.Builder
	size := `width="` + fmtf(width) + `" height="` + fmtf(height) + `"`
	if f.FillWidth {
		size = `width="100%"`
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" %s viewBox="0 0 %s %s" font-family="sans-serif" font-size="12">`+"\n",
		size, fmtf(width), fmtf(height))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%s" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", fmtf(left), esc(f.Title))
	b.WriteString(legend.String())
	for i, p := range f.Panels {
		y0 := top + float64(i)*(panelHeight+gap)
		plot := frame{x0: left, y0: y0, w: width - left - right, h: panelHeight, n: max(n-1, 1), ytop: ytop, xtick: f.XTick, xs: f.X, ticks: f.Ticks}
		plot.axes(&b, ystep, f.YLabel)
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-weight="bold">%s</text>`+"\n", fmtf(left), fmtf(y0-8), esc(p.Title))
		for _, m := range f.Marks {
			plot.mark(&b, m)
		}
		for _, l := range p.Lines {
			plot.line(&b, l)
		}
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" fill="#555">%s</text>`+"\n", fmtf(width-right), fmtf(height-12), esc(f.XLabel))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// legend lists each line name once, in first-seen order, then the marks,
// wrapping onto a new row where a row is full; it returns the rows.
func (f Figure) legend(b *strings.Builder) int {
	seen, x, y, rows := map[string]bool{}, left, 42.0, 1
	entry := func(name string) float64 { // where name's entry starts
		w := 44 + 7*float64(len(name))
		if x > left && x+w-16 > width-right {
			x, y, rows = left, y+legendRow, rows+1
		}
		x += w
		return x - w
	}
	text := func(at float64, name string) {
		fmt.Fprintf(b, `<text x="%s" y="%s">%s</text>`+"\n", fmtf(at+28), fmtf(y+4), esc(name))
	}
	for _, p := range f.Panels {
		for _, l := range p.Lines {
			if seen[l.Name] {
				continue
			}
			seen[l.Name] = true
			at := entry(l.Name)
			fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="3"%s/>`+"\n", fmtf(at), fmtf(y), fmtf(at+22), fmtf(y), l.Color, dash(l.Dash))
			text(at, l.Name)
		}
	}
	for _, m := range f.Marks {
		at := entry(m.Name)
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="22" height="10" fill="%s" fill-opacity="0.3"/>`+"\n", fmtf(at), fmtf(y-5), m.Color)
		text(at, m.Name)
	}
	return rows
}

// frame maps turn and value onto one panel's plot area.
type frame struct {
	x0, y0, w, h float64
	n            int
	ytop         float64
	xtick        func(t float64) string
	xs           []float64 // the points' positions; nil: evenly spaced
	ticks        []Tick
}

// x is where point t (an index, fractions between points) is drawn.
func (p frame) x(t float64) float64 {
	if len(p.xs) < 2 {
		return p.x0 + p.w*t/float64(p.n)
	}
	i := min(max(int(math.Floor(t)), 0), len(p.xs)-2)
	at := p.xs[i] + (t-float64(i))*(p.xs[i+1]-p.xs[i])
	return p.at(at)
}

// at is where position v of the x axis (a value of xs) is drawn.
func (p frame) at(v float64) float64 {
	first, last := p.xs[0], p.xs[len(p.xs)-1]
	if last <= first {
		return p.x0
	}
	return p.x0 + p.w*(v-first)/(last-first)
}
func (p frame) y(v float64) float64 { return p.y0 + p.h - p.h*v/p.ytop }

func (p frame) axes(b *strings.Builder, ystep float64, ylabel string) {
	for v := 0.0; v <= p.ytop+ystep/2; v += ystep {
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", fmtf(p.x0), fmtf(p.y(v)), fmtf(p.x0+p.w), fmtf(p.y(v)))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end">%s</text>`+"\n", fmtf(p.x0-6), fmtf(p.y(v)+4), fmtf(v))
	}
	if p.ticks != nil && len(p.xs) >= 2 {
		for _, t := range p.ticks {
			x := p.at(t.At)
			fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#eee"/>`+"\n", fmtf(x), fmtf(p.y0), fmtf(x), fmtf(p.y0+p.h))
			fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#555">%s</text>`+"\n", fmtf(x), fmtf(p.y0+p.h+14), esc(t.Label))
		}
	} else {
		xstep := niceStep(float64(p.n))
		for t := 0.0; t <= float64(p.n); t += xstep {
			label := fmtf(t)
			if p.xtick != nil {
				label = esc(p.xtick(t))
			}
			fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#555">%s</text>`+"\n", fmtf(p.x(t)), fmtf(p.y0+p.h+14), label)
		}
	}
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#999"/>`+"\n", fmtf(p.x0), fmtf(p.y0), fmtf(p.w), fmtf(p.h))
	fmt.Fprintf(b, `<text transform="translate(14 %s) rotate(-90)" text-anchor="middle" fill="#555">%s</text>`+"\n", fmtf(p.y0+p.h/2), esc(ylabel))
}

// mark shades each run of consecutive indices of m.At, half a point to
// either side, within the plot.
func (p frame) mark(b *strings.Builder, m Mark) {
	for i := 0; i < len(m.At); {
		j := i
		for j+1 < len(m.At) && m.At[j+1] == m.At[j]+1 {
			j++
		}
		x0 := max(p.x(float64(m.At[i])-0.5), p.x0)
		x1 := min(p.x(float64(m.At[j])+0.5), p.x0+p.w)
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.3"><title>%s</title></rect>`+"\n",
			fmtf(x0), fmtf(p.y0), fmtf(x1-x0), fmtf(p.h), m.Color, esc(m.Name))
		i = j + 1
	}
}

func (p frame) line(b *strings.Builder, l Line) {
	if len(l.Values) == 0 {
		return
	}
	var pts []string
	for i, v := range l.Values {
		if l.Step && i > 0 {
			pts = append(pts, fmtf(p.x(float64(i)))+","+fmtf(p.y(l.Values[i-1])))
		}
		pts = append(pts, fmtf(p.x(float64(i)))+","+fmtf(p.y(v)))
	}
	if len(l.Lower) == len(l.Values) {
		lower := make([]string, 0, len(l.Lower))
		for i := len(l.Lower) - 1; i >= 0; i-- {
			lower = append(lower, fmtf(p.x(float64(i)))+","+fmtf(p.y(l.Lower[i])))
		}
		fmt.Fprintf(b, `<polygon points="%s %s" fill="%s" fill-opacity="0.18" stroke="none"/>`+"\n",
			strings.Join(pts, " "), strings.Join(lower, " "), l.Color)
	} else if l.Fill {
		last := p.x(float64(len(l.Values) - 1))
		fmt.Fprintf(b, `<polygon points="%s,%s %s %s,%s" fill="%s" fill-opacity="0.18" stroke="none"/>`+"\n",
			fmtf(p.x(0)), fmtf(p.y(0)), strings.Join(pts, " "), fmtf(last), fmtf(p.y(0)), l.Color)
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), l.Color, dash(l.Dash))
}

// niceStep is a 1, 2 or 5 x 10^k step giving at most six intervals.
func niceStep(span float64) float64 {
	if span <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(span/6)))
	for _, m := range []float64{1, 2, 5} {
		if span/(m*mag) <= 6 {
			return m * mag
		}
	}
	return 10 * mag
}

func dash(on bool) string {
	if on {
		return ` stroke-dasharray="6 4"`
	}
	return ""
}

func esc(s string) string { return html.EscapeString(s) }

// fmtf prints coordinates with at most one decimal, deterministically.
func fmtf(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }
