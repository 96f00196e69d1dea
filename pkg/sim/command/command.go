// Package command is `scaler simulate`: its flags, the traces it reads (a
// named series, a CSV file, a Prometheus range query), the controllers it
// builds from them and what it prints (the metric-delay model's tables,
// JSON, an SVG picture, the side-by-side comparison, the decision-quality
// report). The binary only calls Simulate; the flags of trigger keys are
// derived from the trigger schema's declarations (keyFlags).
package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/backtest"
	"github.com/barometer-scaler/barometer/pkg/sim/report"
)

// UsageError is an error in the command's flags or arguments: the caller
// shows the usage with it.
type UsageError struct{ error }

func (e UsageError) Unwrap() error { return e.error }

// Simulate is `scaler simulate`: one run, the metric-delay model's tables
// (docs/semantics.md, "The tables and the jump test"), JSON, an SVG
// picture, or the decision-quality report.
func Simulate(args []string, stdout io.Writer) error {
	o, fs, err := parseSimulate(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "usage: scaler simulate [flags]")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil
	}
	if err != nil {
		return UsageError{fmt.Errorf("simulate: %w", err)}
	}
	if o.report != "" {
		return writeReport(o.report)
	}
	series, queue, err := o.loadSeries(context.Background())
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	saturation := o.saturation
	if queue != nil && !o.set["saturation"] {
		saturation = 1 // a replica does one second of work per second: load is in busy replicas
	}
	m := sim.Model{Saturation: saturation, Target: o.occupancy, MinReplicas: o.floor, MaxReplicas: o.maxReplicas, InitialReplicas: o.initial}
	if queue != nil {
		series = queue.Series(m, o.turn)
	}
	cfg := sim.Config{Model: m, Delay: o.delay, StartupTurns: o.startup, Turn: o.turn}
	if o.compare {
		return runCompare(stdout, cfg, series, queue != nil, o)
	}
	return runOne(stdout, cfg, series, queue != nil, o)
}

// loadSeries reads the trace: the --from-prometheus range query, or
// --trace (a load series, or a queue trace returned second, to be made a
// series once the model is known).
func (o *simulateOptions) loadSeries(ctx context.Context) (sim.Series, *sim.QueueTrace, error) {
	if o.prom.Server == "" {
		s, q, err := loadTrace(o)
		if err != nil {
			return s, q, fmt.Errorf("--trace: %w", err)
		}
		return s, q, nil
	}
	series, history, err := backtest.Load(ctx, o.prom.Range(), o.saturation)
	if err != nil {
		return series, nil, err
	}
	o.history = history
	if !o.set["turn"] {
		o.turn = o.prom.Step
	}
	if o.set["event"] {
		series.EventStart, series.EventEnd, _ = parseEvent(o.event)
	}
	return series, nil, nil
}

// runOne runs the chosen controller once and prints the run as asked.
func runOne(stdout io.Writer, cfg sim.Config, series sim.Series, queue bool, o *simulateOptions) error {
	setting, note, err := o.setting(cfg, series)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	res := sim.Run(cfg, series, setting.Controller(cfg, series))
	if o.svgFile != "" {
		title := fmt.Sprintf("%s, %s, metric delay %d", series.Name, setting.Name, o.delay)
		if err := writeSVG(o.svgFile, cfg.Model, title, []sim.Named{{Name: scoreLine(res.Score), Result: res}}); err != nil {
			return err
		}
	}
	switch {
	case o.table:
		return writeTables(stdout, cfg, series, setting, note, o)
	case o.json:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Series       string     `json:"series"`
			Controller   string     `json:"controller"`
			Delay        int        `json:"delay"`
			StartupTurns int        `json:"startupTurns"`
			Turn         string     `json:"turn"`
			Score        sim.Score  `json:"score"`
			Steps        []sim.Step `json:"steps"`
		}{series.Name, setting.Name, o.delay, o.startup, o.turn.String(), res.Score, res.Steps})
	}
	return writeRun(stdout, cfg, series, setting.Name, note, res.Score, queue)
}

// writeSVG draws runs, one panel each, to path.
func writeSVG(path string, m sim.Model, title string, runs []sim.Named) error {
	var b bytes.Buffer
	if err := sim.Chart(m, title, runs).Write(&b); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("simulate: --svg: %w", err)
	}
	return nil
}

// writeReport regenerates the report and its pictures beside it.
func writeReport(path string) error {
	files, err := report.Generate(filepath.Base(path))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), f.Name), f.Data, 0o644); err != nil {
			return fmt.Errorf("simulate: --report: %w", err)
		}
	}
	return nil
}
