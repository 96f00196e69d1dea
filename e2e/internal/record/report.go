package record

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Run is a finished recording.
type Run struct {
	Points []Point       `json:"points"`
	Events []Event       `json:"events"`
	Every  time.Duration `json:"every"`
}

// Metrics are the SPEC Research Group elasticity metrics (Herbst et al.,
// SPEC-RG-2016-01; TOMPECS 2018) with demand d_t = the replicas the load
// needs and supply s_t = the ready replicas, each sample weighted by the
// time to the next one; beside them, the plain counts.
type Metrics struct {
	// Seconds is the length of the run (T).
	Seconds float64 `json:"seconds"`
	// UnderAccuracy and OverAccuracy (theta_U, theta_O): mean relative
	// under- and over-supply, in percent. A demand of 0 counts as 1 here.
	UnderAccuracy float64 `json:"underAccuracyPct"`
	OverAccuracy  float64 `json:"overAccuracyPct"`
	// UnderTimeshare and OverTimeshare (tau_U, tau_O): percent of the time
	// under- and over-supplied.
	UnderTimeshare float64 `json:"underTimesharePct"`
	OverTimeshare  float64 `json:"overTimesharePct"`
	// Instability (upsilon): percent of sample-to-sample steps in which
	// supply and demand did not move in the same direction.
	Instability float64 `json:"instabilityPct"`
	// Jitter: (supply adaptations - demand changes) per minute.
	Jitter float64 `json:"jitterPerMin"`
	// Changes counts changes of the decided replica count; Oscillations
	// those that reversed the previous change's direction.
	Changes      int `json:"changes"`
	Oscillations int `json:"oscillations"`
	// ReplicaSeconds is the supply integrated over the run; Excess and
	// Shortfall its parts above and below demand.
	ReplicaSeconds   float64 `json:"replicaSeconds"`
	ExcessSeconds    float64 `json:"excessReplicaSeconds"`
	ShortfallSeconds float64 `json:"shortfallReplicaSeconds"`
	// Peak is the largest decided count.
	Peak int `json:"peak"`
}

// Metrics computes the run's metrics.
func (r Run) Metrics() Metrics {
	var m Metrics
	pts := r.Points
	if len(pts) < 2 {
		return m
	}
	total := (pts[len(pts)-1].T - pts[0].T).Seconds()
	m.Seconds = total
	var under, over, underT, overT float64
	var unstable, steps, adaptations, demandChanges int
	lastDir := 0
	for i, p := range pts {
		m.Peak = max(m.Peak, p.Desired)
		if i == len(pts)-1 {
			break
		}
		dt := (pts[i+1].T - p.T).Seconds()
		d, s := float64(p.Demand), float64(p.Ready)
		norm := max(d, 1)
		m.ReplicaSeconds += s * dt
		if s < d {
			under += (d - s) / norm * dt
			underT += dt
			m.ShortfallSeconds += (d - s) * dt
		} else if s > d {
			over += (s - d) / norm * dt
			overT += dt
			m.ExcessSeconds += (s - d) * dt
		}
		n := pts[i+1]
		ds, dd := cmp.Compare(n.Ready-p.Ready, 0), cmp.Compare(n.Demand-p.Demand, 0)
		steps++
		if ds != dd {
			unstable++
		}
		if ds != 0 {
			adaptations++
		}
		if dd != 0 {
			demandChanges++
		}
		if dir := cmp.Compare(n.Desired-p.Desired, 0); dir != 0 {
			m.Changes++
			if lastDir != 0 && dir != lastDir {
				m.Oscillations++
			}
			lastDir = dir
		}
	}
	if total > 0 {
		m.UnderAccuracy, m.OverAccuracy = 100*under/total, 100*over/total
		m.UnderTimeshare, m.OverTimeshare = 100*underT/total, 100*overT/total
		m.Jitter = float64(adaptations-demandChanges) / (total / 60)
	}
	if steps > 0 {
		m.Instability = 100 * float64(unstable) / float64(steps)
	}
	return m
}

// Window returns the run cut to [from, to]: the state at from (the last
// point at or before it) opens it and the state just before to closes it,
// so its Metrics integrate exactly that span. Runs recorded from different
// starts compare only over such a fixed window. A run that ends before to
// closes at its last point.
func (r Run) Window(from, to time.Duration) Run {
	w := Run{Every: r.Every}
	for _, e := range r.Events {
		if e.T >= from && e.T <= to {
			w.Events = append(w.Events, e)
		}
	}
	for _, p := range r.Points {
		switch {
		case p.T <= from:
			p.T = from
			w.Points = []Point{p}
		case p.T < to:
			w.Points = append(w.Points, p)
		default:
			if n := len(w.Points); n > 0 {
				last := w.Points[n-1]
				last.T = to
				w.Points = append(w.Points, last)
			}
			return w
		}
	}
	return w
}

// Write writes name.json (points, events, metrics, measured times) and
// name.svg into dir.
func (r Run) Write(dir, name, title string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	doc := struct {
		Title   string  `json:"title"`
		Metrics Metrics `json:"metrics"`
		Run
	}{title, r.Metrics(), r}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, name+".svg"))
	if err != nil {
		return err
	}
	if err := r.SVG(f, title); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// MarshalJSON writes NaN signals as null.
func (p Point) MarshalJSON() ([]byte, error) {
	type plain struct {
		T       float64  `json:"t"`
		Desired int      `json:"desired"`
		Ready   int      `json:"ready"`
		Demand  int      `json:"demand"`
		Load    float64  `json:"load"`
		Signal  *float64 `json:"signal"`
	}
	q := plain{T: math.Round(p.T.Seconds()*1000) / 1000, Desired: p.Desired, Ready: p.Ready, Demand: p.Demand, Load: p.Load}
	if !math.IsNaN(p.Signal) && !math.IsInf(p.Signal, 0) {
		s := p.Signal
		q.Signal = &s
	}
	return json.Marshal(q)
}

// SVG draws demand, decided and ready replicas over time, with the events.
func (r Run) SVG(w io.Writer, title string) error {
	const (
		width, height         = 960.0, 400.0
		left, right, top, bot = 56.0, 24.0, 48.0, 72.0
	)
	pw, ph := width-left-right, height-top-bot
	tmax := 1.0
	ymax := 1
	for _, p := range r.Points {
		tmax = max(tmax, p.T.Seconds())
		ymax = max(ymax, p.Desired, p.Ready, p.Demand)
	}
	for _, e := range r.Events {
		tmax = max(tmax, e.T.Seconds())
	}
	ytop := float64(ymax + 1)
	x := func(t float64) float64 { return left + pw*t/tmax }
	y := func(v float64) float64 { return top + ph - ph*v/ytop }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%g" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(title))
	// Axes and grid.
	for v := 0; v <= int(ytop); v += ystep(ytop) {
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y(float64(v)), left+pw, y(float64(v)))
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end">%d</text>`+"\n", left-6, y(float64(v))+4, v)
	}
	ts := tstep(tmax)
	for t := 0.0; t <= tmax+1e-9; t += ts {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#999"/>`+"\n", x(t), top+ph, x(t), top+ph+4)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", x(t), top+ph+18, strconv.FormatFloat(t, 'f', -1, 64))
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">seconds</text>`+"\n", left+pw/2, top+ph+34)
	fmt.Fprintf(&b, `<text x="14" y="%g" transform="rotate(-90 14 %g)" text-anchor="middle">replicas</text>`+"\n", top+ph/2, top+ph/2)
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#999"/>`+"\n", left, top, pw, ph)
	// Events.
	for i, e := range r.Events {
		ex := x(e.T.Seconds())
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#c0392b" stroke-dasharray="4 3"/>`+"\n", ex, top, ex, top+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g" fill="#c0392b" font-size="11">%s</text>`+"\n", ex+3, top+12+float64(i%3)*13, esc(e.Label))
	}
	// Series, as staircases.
	series := []struct {
		name, color, dash string
		v                 func(Point) int
	}{
		{"demand (load / per-replica target)", "#7f8c8d", "6 4", func(p Point) int { return p.Demand }},
		{"decided (spec.replicas)", "#2c6fbb", "", func(p Point) int { return p.Desired }},
		{"ready", "#27ae60", "", func(p Point) int { return p.Ready }},
	}
	for i, s := range series {
		// Offset a little per series so equal lines stay visible; one
		// step per change.
		var path strings.Builder
		last := math.NaN()
		for j, p := range r.Points {
			px, py := x(p.T.Seconds()), y(float64(s.v(p))+float64(i-1)*0.04)
			switch {
			case j == 0:
				fmt.Fprintf(&path, "M%.1f %.1f", px, py)
			case py != last:
				fmt.Fprintf(&path, " H%.1f V%.1f", px, py)
			case j == len(r.Points)-1:
				fmt.Fprintf(&path, " H%.1f", px)
			}
			last = py
		}
		dash := ""
		if s.dash != "" {
			dash = ` stroke-dasharray="` + s.dash + `"`
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", path.String(), s.color, dash)
		lx := left + float64(i)*260
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"%s/>`+"\n", lx, height-14, lx+24, height-14, s.color, dash)
		fmt.Fprintf(&b, `<text x="%g" y="%g">%s</text>`+"\n", lx+30, height-10, esc(s.name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func ystep(top float64) int {
	switch {
	case top <= 12:
		return 1
	case top <= 30:
		return 5
	}
	return 10
}

func tstep(tmax float64) float64 {
	for _, s := range []float64{5, 10, 15, 30, 60, 120, 300} {
		if tmax/s <= 12 {
			return s
		}
	}
	return 600
}

func esc(s string) string { return html.EscapeString(s) }
