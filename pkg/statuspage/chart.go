package statuspage

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/internal/chart"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// The chart's series, as its legend names them.
const (
	seriesRaw      = "raw demand"
	seriesScale    = "scaleValue"
	seriesForecast = "forecast"
	seriesAsks     = "replicas KEDA asks"
	seriesMeasured = "measured across"
)

// bands are the chart's shaded kinds: one per part of the reason (its
// words, as the legend names them), then the samples that failed or went
// stale.
var bands = []struct {
	name, color string
	part        signal.Parts
}{
	{"held by safety gate", "#16a2b8", signal.PartGate},
	{"held by churn budget", "#2c7be5", signal.PartChurn},
	{"saturation surge", "#f39c12", signal.PartSurge},
	{"lead", "#9b59b6", signal.PartLead},
	{"headroom", "#00a86b", signal.PartHeadroom},
	{"forecast", "#8e44ad", signal.PartForecast},
}

// drawHistory draws a target's kept samples, oldest left, on a time axis
// ending now: demand and what was published in one panel, replica counts
// in the other, on one scale (both are in replicas). Older samples are
// kept as buckets: their highest values are drawn, and the published
// value's range is shaded. The replicas KEDA asks for are the reader's
// (trigger.Reader.Replicas). The bands are the parts of the reasons, from
// the signal's own fields.
func drawHistory(points []sampling.HistoryPoint, reader trigger.Reader, interval time.Duration, now time.Time) (template.HTML, error) {
	n := len(points)
	raw, scale, scaleMin, forecast := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	asks, measured, xs := make([]float64, n), make([]float64, n), make([]float64, n)
	marks := make([]chart.Mark, len(bands)+2)
	for i, b := range bands {
		marks[i] = chart.Mark{Name: b.name, Color: b.color}
	}
	marks[len(bands)] = chart.Mark{Name: "failed", Color: "#555555"}
	marks[len(bands)+1] = chart.Mark{Name: "stale", Color: "#e84393"}
	hasForecast, buckets := false, 0
	for i, p := range points {
		xs[i] = p.At.Sub(now).Seconds()
		raw[i], scale[i], scaleMin[i], forecast[i] = p.Raw, p.Scale, p.ScaleMin, p.Forecast
		hasForecast = hasForecast || p.Forecast > 0
		asks[i] = float64(reader.Replicas(p.Scale))
		measured[i] = float64(p.Replicas)
		if p.Samples > 1 {
			buckets++
		}
		for j, b := range bands {
			if p.Parts&b.part != 0 {
				marks[j].At = append(marks[j].At, i)
			}
		}
		if p.Failed {
			marks[len(bands)].At = append(marks[len(bands)].At, i)
		}
		if p.Stale {
			marks[len(bands)+1].At = append(marks[len(bands)+1].At, i)
		}
	}
	demand := []chart.Line{
		{Name: seriesRaw, Values: raw, Color: "#8c8c8c", Fill: true},
		{Name: seriesScale, Values: scale, Color: "#1f5fbf", Lower: scaleMin},
	}
	if hasForecast {
		demand = append(demand, chart.Line{Name: seriesForecast, Values: forecast, Color: "#8e44ad", Dash: true})
	}
	title := "The last " + age(now.Sub(points[0].At).Round(time.Second)) + ", one sample every " + interval.String()
	if buckets > 0 {
		title += fmt.Sprintf("; before the newest %d, buckets of %d", n-buckets, sampling.BucketSamples)
	}
	f := chart.Figure{
		Title: title, XLabel: "time before now", YLabel: "replicas", FillWidth: true,
		Panels: []chart.Panel{
			{Title: "Demand and the published scaleValue, in replicas of pressure", Lines: demand},
			{Title: "Replicas KEDA asks for at target " + number(reader.TargetPressure) + ", and measured across", Lines: []chart.Line{
				{Name: seriesAsks, Values: asks, Color: "#c0392b", Step: true},
				{Name: seriesMeasured, Values: measured, Color: "#27ae60", Step: true, Dash: true},
			}},
		},
		Marks: slices.DeleteFunc(marks, func(m chart.Mark) bool { return len(m.At) == 0 }),
		X:     xs,
		Ticks: timeTicks(xs[0]),
	}
	var b strings.Builder
	if err := f.Write(&b); err != nil {
		return "", err
	}
	// The figure escapes every text it holds (internal/chart); its numbers and
	// colours are the page's own.
	return template.HTML(b.String()), nil
}

// tickSteps are the round spans the time axis is labelled at.
var tickSteps = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour}

// timeTicks labels the axis from first (seconds before now, negative) to
// now at a round step, at most seven labels: "-10m", ..., "now".
func timeTicks(first float64) []chart.Tick {
	span := time.Duration(-first * float64(time.Second))
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 6 {
			step = s
			break
		}
	}
	ticks := []chart.Tick{{At: 0, Label: "now"}}
	for at := step; at <= span; at += step {
		ticks = append(ticks, chart.Tick{At: -at.Seconds(), Label: "-" + roundSpan(at)})
	}
	return ticks
}

// roundSpan prints a round span in its largest unit: "30s", "10m", "2h".
func roundSpan(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}
