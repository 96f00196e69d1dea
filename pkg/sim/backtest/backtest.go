// Package backtest reads a load trace from a Prometheus range query (the
// backtest of `scaler simulate --from-prometheus`) and the history the
// prometheus source would read beside it for the seasonal forecast, through
// the prometheus source's own client: every dialled address vetted by the
// allow-list, no proxy, no redirect, the response bounded.
package backtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promclient"
	"github.com/barometer-scaler/barometer/pkg/sim"
	"github.com/barometer-scaler/barometer/pkg/sim/control"
)

// Flags are the flags of `scaler simulate --from-prometheus`.
type Flags struct {
	Server, Query, Start, End string
	// Step is set by the command's --step, which also names the naive
	// rule's step limit.
	Step, Timeout time.Duration
}

// maxPromTurns bounds a backtest, so a wide range with a short step cannot
// ask the server for more than a simulation reads.
const maxPromTurns = 11000 // Prometheus's own limit on points per series

// Define defines the flags on fs.
func (p *Flags) Define(fs *flag.FlagSet) {
	fs.StringVar(&p.Server, "from-prometheus", "", "read the load trace from this Prometheus server's range query (with --query, --start, --end, --step); the address must pass $"+allow.EnvVar+", as for the prometheus source")
	fs.StringVar(&p.Query, "query", "", "from-prometheus: PromQL for the load, one series (requests/s at --saturation per replica; wrap it in sum() for a total)")
	fs.StringVar(&p.Start, "start", "", "from-prometheus: start of the range, RFC 3339 or Unix seconds")
	fs.StringVar(&p.End, "end", "", "from-prometheus: end of the range, RFC 3339 or Unix seconds")
	p.Step = 15 * time.Second // set by --step (stepFlag)
	fs.DurationVar(&p.Timeout, "query-timeout", 30*time.Second, "from-prometheus: how long the query may take")
}

// Validate checks the flags given (set names them).
func (p Flags) Validate(set map[string]bool) error {
	if p.Server == "" {
		for _, name := range []string{"query", "start", "end", "query-timeout"} {
			if set[name] {
				return fmt.Errorf("--%s applies to --from-prometheus", name)
			}
		}
		if set["step"] && p.Step != 15*time.Second {
			return errors.New("--step as a duration applies to --from-prometheus")
		}
		return nil
	}
	if set["trace"] {
		return errors.New("--trace: not with --from-prometheus (the query is the trace)")
	}
	if p.Query == "" {
		return errors.New("--query (allowed: the PromQL of the load, required with --from-prometheus)")
	}
	start, err1 := parseTime(p.Start)
	end, err2 := parseTime(p.End)
	switch {
	case err1 != nil:
		return fmt.Errorf("--start %q (allowed: RFC 3339 or Unix seconds)", p.Start)
	case err2 != nil:
		return fmt.Errorf("--end %q (allowed: RFC 3339 or Unix seconds)", p.End)
	case !end.After(start):
		return fmt.Errorf("--end %q (allowed: after --start)", p.End)
	case p.Step < time.Second:
		return fmt.Errorf("--step %s (allowed: a duration >= 1s)", p.Step)
	case end.Sub(start)/p.Step >= maxPromTurns:
		return fmt.Errorf("--step %s (allowed: fewer than %d steps from --start to --end)", p.Step, maxPromTurns)
	case p.Timeout <= 0:
		return fmt.Errorf("--query-timeout %s (allowed: a duration > 0)", p.Timeout)
	}
	return nil
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return time.Time{}, errors.New("not a time")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

// Range is the range the flags name; Validate has checked them.
func (p Flags) Range() Range {
	start, _ := parseTime(p.Start)
	end, _ := parseTime(p.End)
	return Range{Server: p.Server, Query: p.Query, Start: start, End: end, Step: p.Step, Timeout: p.Timeout}
}

// Range is the range query a backtest reads.
type Range struct {
	// Server is the Prometheus server's URL; Query the load's PromQL.
	Server, Query string
	// Start, End and Step lay out the turns; Timeout bounds each query.
	Start, End    time.Time
	Step, Timeout time.Duration
}

// serverURL vets the address as the prometheus source's serverAddress
// is vetted: an http or https URL without credentials, query or fragment,
// whose host the allow-list admits.
func serverURL(raw string, list *allow.List) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--from-prometheus %q (allowed: an http or https URL such as http://prometheus.monitoring.svc:9090, without credentials, query or fragment)", raw)
	}
	if err := list.Host(u.Hostname()); err != nil {
		return "", fmt.Errorf("--from-prometheus %q: %w", raw, err)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Load runs the range query and makes its one series the load, one turn
// per step. A step with no point (a gap in the data) repeats the load
// before it, so the trace keeps the range's length and its timing. It
// also reads the history the prometheus source would read for the
// seasonal forecast (History), the load at saturation per replica being
// the demand. The server must pass $BAROMETER_ALLOWED_TARGETS.
func Load(ctx context.Context, p Range, saturation float64) (sim.Series, *History, error) {
	list, err := allow.FromSetting(os.Getenv(allow.EnvVar))
	if err != nil {
		return sim.Series{}, nil, err
	}
	addr, err := serverURL(p.Server, list)
	if err != nil {
		return sim.Series{}, nil, err
	}
	start, end := p.Start, p.End
	query := func(r v1.Range) (*model.SampleStream, error) {
		v, err := promclient.QueryRange(ctx, promclient.RangeQuery{ServerAddress: addr, Query: p.Query,
			Range: r, Timeout: p.Timeout, Control: list.Control})
		if err != nil {
			return nil, err
		}
		m, ok := v.(model.Matrix)
		if !ok || len(m) > 1 {
			n := 0
			if ok {
				n = len(m)
			}
			return nil, fmt.Errorf("--query returned %d series; want one (wrap it in sum() for a total)", n)
		}
		if len(m) == 0 {
			return nil, nil
		}
		return m[0], nil
	}
	ss, err := query(v1.Range{Start: start, End: end, Step: p.Step})
	if err != nil {
		return sim.Series{}, nil, fmt.Errorf("--from-prometheus: %w", err)
	}
	if ss == nil {
		return sim.Series{}, nil, errors.New("--query returned 0 series; want one (wrap it in sum() for a total)")
	}
	series, err := promSeries(ss, start, end, p.Step, p.Server)
	if err != nil {
		return series, nil, err
	}
	history, err := readHistory(query, start, end, saturation)
	if err != nil {
		return series, nil, fmt.Errorf("--from-prometheus: %w", err)
	}
	return series, history, nil
}

// History is the history of a backtest's query as the prometheus
// source reads it for the seasonal forecast (promsource.Source.ObserveSeason):
// the query on the pressure.SeasonStep grid, from the long history
// before the range's start to its end, in the simulation's clock (the
// range's start is sim.Epoch). The prometheus source folds each instant's
// replicas into demand; a backtest's query is the load, so its demand is
// the load over the saturation, what the replicas would report if none
// were saturated.
type History struct {
	points []pressure.DemandPoint // oldest first, on the grid
}

var _ control.SeasonHistory = (*History)(nil)

// readHistory reads the history a day at a time, as the prometheus
// source reads its long history (pressure.SeasonWindow.Reads). The grid
// runs through the range's start, so it lies on the simulation's. Where
// the query had no value there is no point.
func readHistory(query func(v1.Range) (*model.SampleStream, error), start, end time.Time, saturation float64) (*History, error) {
	// The long history of the range's first hour reaches this far back.
	first := start.Add(-(pressure.SeasonLong + pressure.SeasonDetectEvery).Truncate(pressure.SeasonStep))
	h := &History{}
	for _, w := range (pressure.SeasonWindow{Start: first, End: end}).Reads() {
		r := v1.Range{Start: w.Start, End: w.End, Step: pressure.SeasonStep}
		ss, err := query(r)
		if err != nil {
			return nil, fmt.Errorf("the history of the seasonal forecast from %s to %s: %w", r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339), err)
		}
		if ss == nil {
			continue
		}
		for _, pt := range ss.Values {
			v := float64(pt.Value)
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				continue
			}
			h.points = append(h.points, pressure.DemandPoint{At: sim.Epoch.Add(pt.Timestamp.Time().Sub(start)), Demand: v / saturation})
		}
	}
	return h, nil
}

// Window returns the points of w (control.SeasonHistory).
func (h *History) Window(w pressure.SeasonWindow) []pressure.DemandPoint {
	from := sort.Search(len(h.points), func(i int) bool { return !h.points[i].At.Before(w.Start) })
	to := sort.Search(len(h.points), func(i int) bool { return h.points[i].At.After(w.End) })
	return h.points[from:max(from, to)]
}

// promSeries lays the points on the turns start, start + step, ..., end.
func promSeries(ss *model.SampleStream, start, end time.Time, step time.Duration, name string) (sim.Series, error) {
	turns := int(end.Sub(start)/step) + 1
	load := make([]float64, turns)
	have := make([]bool, turns)
	for _, pt := range ss.Values {
		i := int(pt.Timestamp.Time().Sub(start) / step)
		v := float64(pt.Value)
		if i < 0 || i >= turns || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue
		}
		load[i], have[i] = v, true
	}
	first := -1
	for i := range load {
		switch {
		case have[i] && first < 0:
			first = i
		case !have[i] && i > 0:
			load[i] = load[i-1]
		}
	}
	if first < 0 {
		return sim.Series{}, errors.New("--query returned no usable point in the range")
	}
	for i := range first {
		load[i] = load[first]
	}
	return sim.Series{Name: name + " " + start.Format(time.RFC3339) + ".." + end.Format(time.RFC3339), Load: load}, nil
}
