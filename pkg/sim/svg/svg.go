// Package svg writes small, deterministic line charts as SVG: stacked
// panels over a shared x axis (turns) and a shared y scale, with a legend.
package svg

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
}

// Panel is one chart; all panels share the x and y scales.
type Panel struct {
	Title string
	Lines []Line
}

// Figure is the whole picture.
type Figure struct {
	Title          string
	XLabel, YLabel string
	Panels         []Panel
}

const (
	width       = 960.0
	left, right = 56.0, 16.0
	top         = 76.0 // title, legend and the first panel's title
	panelHeight = 150.0
	gap         = 42.0 // between panels: the x tick labels and the next title
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
	height := top + float64(len(f.Panels))*(panelHeight+gap) + 8

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="12">`+"\n",
		fmtf(width), fmtf(height), fmtf(width), fmtf(height))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%s" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", fmtf(left), esc(f.Title))
	f.legend(&b)
	for i, p := range f.Panels {
		y0 := top + float64(i)*(panelHeight+gap)
		plot := frame{x0: left, y0: y0, w: width - left - right, h: panelHeight, n: max(n-1, 1), ytop: ytop}
		plot.axes(&b, ystep, f.YLabel)
		fmt.Fprintf(&b, `<text x="%s" y="%s" font-weight="bold">%s</text>`+"\n", fmtf(left), fmtf(y0-8), esc(p.Title))
		for _, l := range p.Lines {
			plot.line(&b, l)
		}
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" fill="#555">%s</text>`+"\n", fmtf(width-right), fmtf(height-12), esc(f.XLabel))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// legend lists each line name once, in first-seen order.
func (f Figure) legend(b *strings.Builder) {
	seen, x := map[string]bool{}, left
	for _, p := range f.Panels {
		for _, l := range p.Lines {
			if seen[l.Name] {
				continue
			}
			seen[l.Name] = true
			fmt.Fprintf(b, `<line x1="%s" y1="42" x2="%s" y2="42" stroke="%s" stroke-width="3"%s/>`+"\n", fmtf(x), fmtf(x+22), l.Color, dash(l.Dash))
			fmt.Fprintf(b, `<text x="%s" y="46">%s</text>`+"\n", fmtf(x+28), esc(l.Name))
			x += 44 + 7*float64(len(l.Name))
		}
	}
}

// frame maps turn and value onto one panel's plot area.
type frame struct {
	x0, y0, w, h float64
	n            int
	ytop         float64
}

func (p frame) x(t float64) float64 { return p.x0 + p.w*t/float64(p.n) }
func (p frame) y(v float64) float64 { return p.y0 + p.h - p.h*v/p.ytop }

func (p frame) axes(b *strings.Builder, ystep float64, ylabel string) {
	for v := 0.0; v <= p.ytop+ystep/2; v += ystep {
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", fmtf(p.x0), fmtf(p.y(v)), fmtf(p.x0+p.w), fmtf(p.y(v)))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end">%s</text>`+"\n", fmtf(p.x0-6), fmtf(p.y(v)+4), fmtf(v))
	}
	xstep := niceStep(float64(p.n))
	for t := 0.0; t <= float64(p.n); t += xstep {
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#555">%s</text>`+"\n", fmtf(p.x(t)), fmtf(p.y0+p.h+14), fmtf(t))
	}
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#999"/>`+"\n", fmtf(p.x0), fmtf(p.y0), fmtf(p.w), fmtf(p.h))
	fmt.Fprintf(b, `<text transform="translate(14 %s) rotate(-90)" text-anchor="middle" fill="#555">%s</text>`+"\n", fmtf(p.y0+p.h/2), esc(ylabel))
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
	if l.Fill {
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
