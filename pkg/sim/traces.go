package sim

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"time"
)

// The public request-rate traces of real services: raw counts per step,
// one per line (ReadCSV's format); testdata/traces/PROVENANCE.md says
// where each comes from, under which licence, and how it was cut.
//
//go:embed testdata/traces/*.csv
var realTraceFiles embed.FS

// RealTrace is one of the embedded traces of real traffic.
type RealTrace struct {
	// File is the CSV's name under testdata/traces.
	File string
	// Step is the time each count covers: the run's turn.
	Step time.Duration
	// Turns is how many counts the file holds.
	Turns int
	// Source names the service and the span in a few words.
	Source string
}

// RealTraces lists the embedded traces.
func RealTraces() []RealTrace {
	return []RealTrace{
		{"nasa-http-1995-07-12-13-1m.csv", time.Minute, 2880, "NASA KSC web server, 2 days per minute"},
		{"nasa-http-1995-07-13-15s.csv", 15 * time.Second, 5760, "NASA KSC web server, launch day per 15 s"},
		{"nasa-http-1995-08-04-31-5m.csv", 5 * time.Minute, 8064, "NASA KSC web server, 4 weeks per 5 min"},
		{"nab-elb-request-count-8c0756-5m.csv", 5 * time.Minute, 4032, "AWS load balancer, 2 weeks per 5 min"},
		{"azure-llm-conv-2023-11-16-15s.csv", 15 * time.Second, 232, "Azure LLM conversation service, 1 h per 15 s"},
		{"azure-llm-code-2023-11-16-15s.csv", 15 * time.Second, 228, "Azure LLM code service, 1 h per 15 s"},
		{"nab-nyc-taxi-2014-09-01-10-26-30m.csv", 30 * time.Minute, 2688, "New York City taxi passengers, 8 weeks per 30 min"},
	}
}

// Load reads the trace's counts; the series is named after the file.
func (t RealTrace) Load() (Series, error) {
	data, err := realTraceFiles.ReadFile("testdata/traces/" + t.File)
	if err != nil {
		return Series{}, fmt.Errorf("real trace %s: %w", t.File, err)
	}
	return ReadCSV(bytes.NewReader(data), t.File)
}

// PeakModel is the model a real trace runs under: the saturation is set
// so that the trace's highest count needs exactly peak replicas at the
// target occupancy (its loads stay raw counts per step), with 1 to
// 2 x peak replicas, starting at what the first count needs. A series
// without load keeps saturation 1.
func PeakModel(s Series, target float64, peak int) Model {
	top := 0.0
	for _, l := range s.Load {
		top = max(top, l)
	}
	m := Model{Saturation: 1, Target: target, MinReplicas: 1, MaxReplicas: 2 * peak}
	if top > 0 && peak > 0 {
		m.Saturation = top / (target * float64(peak))
		// The division's rounding may leave the top a hair above peak
		// replicas' worth; the next float up is exact enough.
		for m.Items(top) > peak {
			m.Saturation = math.Nextafter(m.Saturation, math.Inf(1))
		}
	}
	if len(s.Load) > 0 {
		m.InitialReplicas = m.Required(s.Load[0])
	} else {
		m.InitialReplicas = 1
	}
	return m
}
