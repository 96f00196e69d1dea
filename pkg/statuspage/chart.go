package statuspage

import (
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/internal/chart"
	"github.com/barometer-scaler/barometer/pkg/sampling"
)

// The chart's series and marks, as its legend names them.
const (
	seriesRaw      = "raw demand"
	seriesScale    = "scaleValue"
	seriesForecast = "forecast"
	seriesAsks     = "replicas KEDA asks"
	seriesMeasured = "measured across"
	markSurge      = "surge"
	markHeld       = "held"
	markFailed     = "failed"
	markStale      = "stale"
)

// drawHistory draws a target's kept samples, oldest left: demand and what
// was published in one panel, replica counts in the other, on one scale
// (both are in replicas). The replicas KEDA asks for are ceil(scaleValue /
// target), the HPA's arithmetic for an AverageValue target before its
// tolerance and the ScaledObject's bounds; a hair under a whole number
// (float rounding) does not count as one more.
func drawHistory(points []sampling.HistoryPoint, target float64, interval time.Duration, now time.Time) (template.HTML, error) {
	n := len(points)
	raw, scale, forecast := make([]float64, n), make([]float64, n), make([]float64, n)
	asks, measured := make([]float64, n), make([]float64, n)
	var surge, held, failed, stale []int
	hasForecast := false
	for i, p := range points {
		raw[i], scale[i], forecast[i] = p.Raw, p.Scale, p.Forecast
		hasForecast = hasForecast || p.Forecast > 0
		if target > 0 {
			asks[i] = math.Ceil(p.Scale/target - 1e-6)
		}
		measured[i] = float64(p.Replicas)
		for _, m := range []struct {
			on bool
			at *[]int
		}{{p.Surge, &surge}, {p.Held, &held}, {p.Failed, &failed}, {p.Stale, &stale}} {
			if m.on {
				*m.at = append(*m.at, i)
			}
		}
	}
	demand := []chart.Line{
		{Name: seriesRaw, Values: raw, Color: "#8c8c8c", Fill: true},
		{Name: seriesScale, Values: scale, Color: "#1f5fbf"},
	}
	if hasForecast {
		demand = append(demand, chart.Line{Name: seriesForecast, Values: forecast, Color: "#8e44ad", Dash: true})
	}
	f := chart.Figure{
		Title:  "The last " + plural(n, "sample") + ", one every " + interval.String(),
		XLabel: "time before now", YLabel: "replicas",
		Panels: []chart.Panel{
			{Title: "Demand and the published scaleValue, in replicas of pressure", Lines: demand},
			{Title: "Replicas KEDA asks for at target " + number(target) + ", and measured across", Lines: []chart.Line{
				{Name: seriesAsks, Values: asks, Color: "#c0392b", Step: true},
				{Name: seriesMeasured, Values: measured, Color: "#27ae60", Step: true, Dash: true},
			}},
		},
		Marks: []chart.Mark{
			{Name: markSurge, Color: "#f39c12", At: surge},
			{Name: markHeld, Color: "#16a2b8", At: held},
			{Name: markFailed, Color: "#555555", At: failed},
			{Name: markStale, Color: "#e84393", At: stale},
		},
		XTick: func(t float64) string {
			i := min(max(int(t), 0), n-1)
			return "-" + age(now.Sub(points[i].At).Truncate(time.Second))
		},
	}
	var b strings.Builder
	if err := f.Write(&b); err != nil {
		return "", err
	}
	// The figure escapes every text it holds (internal/chart); its numbers and
	// colours are the page's own.
	return template.HTML(b.String()), nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
