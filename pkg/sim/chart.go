package sim

import "github.com/barometer-scaler/barometer/internal/chart"

// Named is a run with the name of its setting.
type Named struct {
	Name   string
	Result Result
}

// Chart draws one panel per run: the load in replicas at the target
// occupancy (shaded), the required replicas (dashed) and the ready replicas
// the controller supplied.
func Chart(m Model, title string, runs []Named) chart.Figure {
	f := chart.Figure{Title: title, XLabel: "turn", YLabel: "replicas"}
	for _, r := range runs {
		load := make([]float64, len(r.Result.Steps))
		required := make([]float64, len(r.Result.Steps))
		supplied := make([]float64, len(r.Result.Steps))
		for t, st := range r.Result.Steps {
			load[t] = st.Load / (m.Saturation * m.Target)
			required[t] = float64(st.Required)
			supplied[t] = float64(st.Ready)
		}
		f.Panels = append(f.Panels, chart.Panel{Title: r.Name, Lines: []chart.Line{
			{Name: "load (replicas at target)", Values: load, Color: "#7f7f7f", Fill: true},
			{Name: "required replicas", Values: required, Color: "#000000", Step: true, Dash: true},
			{Name: "supplied replicas", Values: supplied, Color: "#1f77b4", Step: true},
		}})
	}
	return f
}
