package command

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/internal/promtest"
	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promclient"
	"github.com/barometer-scaler/barometer/pkg/sim"
)

// TestBacktestFromPrometheus reads a load trace from a real Prometheus
// holding a series the test knows: a gauge that reads 1000 x k at the
// k-th scrape. Every turn of the trace must be one of those values, in
// order, and --compare runs every controller on it.
func TestBacktestFromPrometheus(t *testing.T) {
	var scrapes atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE offered_load gauge\noffered_load %d\n", 1000*scrapes.Add(1))
	}))
	defer target.Close()
	srv := promtest.Start(t, []promtest.Target{{URL: target.URL + "/metrics"}}, promtest.Options{})
	srv.WaitFor(t, `count_over_time(offered_load[1m])`, 30*time.Second, func(v model.Vector) bool {
		return len(v) == 1 && v[0].Value >= 6
	})
	end := time.Now().Truncate(time.Second)
	start := end.Add(-20 * time.Second)
	args := []string{"--from-prometheus", srv.URL, "--query", "offered_load", "--start", start.Format(time.RFC3339),
		"--end", strconv.FormatInt(end.Unix(), 10), "--step", "1s"}

	t.Setenv(allow.EnvVar, "") // the default list: no loopback
	if err := Simulate(append(args, "--json"), &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "--from-prometheus") {
		t.Fatalf("a loopback server passed the default allow-list: %v", err)
	}
	t.Setenv(allow.EnvVar, "127.0.0.0/8")

	var run struct {
		Turn  string
		Steps []sim.Step
	}
	if err := json.Unmarshal([]byte(simulate(t, append(args, "--json", "--controller", "barometer", "--delay", "2")...)), &run); err != nil {
		t.Fatal(err)
	}
	if len(run.Steps) != 21 || run.Turn != "1s" {
		t.Fatalf("%d turns of %s, want 21 of 1s (one per step)", len(run.Steps), run.Turn)
	}
	prev, distinct := 0.0, 0
	for _, st := range run.Steps {
		if st.Load < prev || st.Load < 1000 || st.Load != 1000*float64(int(st.Load/1000)) {
			t.Fatalf("turn %d: load %v after %v; want 1000 x k, never falling", st.Turn, st.Load, prev)
		}
		if st.Load != prev {
			distinct++
		}
		prev = st.Load
	}
	// The range holds several of the scrapes (how many depends on when
	// the server was ready, not on the trace's reading).
	if distinct < 3 {
		t.Errorf("%d distinct loads in the trace; the server held at least 6 scrapes", distinct)
	}

	out := simulate(t, append(args, "--compare", "--delay", "2")...)
	for _, want := range []string{"naive", "KPA, Knative defaults", "maxhold, tuned: W=", "Barometer, profile budgeted (default), history from Prometheus, deployed, recommended behavior", "Barometer, profile responsive, deployed", "Barometer, profile original, deployed", "queue", "fixed"} {
		if !strings.Contains(out, want) {
			t.Errorf("--compare lacks %q:\n%s", want, out)
		}
	}

	if err := Simulate([]string{"--from-prometheus", srv.URL, "--query", `{__name__=~"offered_load|up"}`, "--start", start.Format(time.RFC3339),
		"--end", end.Format(time.RFC3339), "--step", "1s"}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "want one") {
		t.Errorf("a query of two series: %v", err)
	}
}

// TestBacktestRefusesAnOversizedResponse: the backtest reads through the
// prometheus source's client, so a server answering with more than the
// source's bound fails the run, naming the bound, rather than growing the
// simulator's memory with the answer.
func TestBacktestRefusesAnOversizedResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[`)
		pad := strings.Repeat(" ", 1<<20)
		for range promclient.DefaultMaxResponseBytes>>20 + 1 {
			if _, err := fmt.Fprint(w, pad); err != nil {
				return // the client stopped reading
			}
		}
		fmt.Fprint(w, `]}}`)
	}))
	defer srv.Close()
	t.Setenv(allow.EnvVar, "127.0.0.0/8")
	err := Simulate([]string{"--from-prometheus", srv.URL, "--query", "offered_load", "--start", "0", "--end", "60", "--step", "15s"}, &strings.Builder{})
	want := fmt.Sprintf("larger than %d bytes", promclient.DefaultMaxResponseBytes)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to say %q", err, want)
	}
}

// TestBacktestReadsTheSeasonFromPrometheus: a backtest reads the seasonal
// forecast's history from Prometheus, as the prometheus source does. The
// server holds nine days of a load that steps from 200 to 1000 at 08:00
// every day; the backtest runs one morning at a 1-minute step. With the
// history the default profile's forecast scales out ahead of the step,
// which the morning alone (five hours, no season in it) could not learn:
// fewer turns short than with the forecast off, and more replicas before
// 08:00. The forecast-only mode publishes without acting: the run is the
// same as with the forecast off.
func TestBacktestReadsTheSeasonFromPrometheus(t *testing.T) {
	day := time.Now().UTC().Truncate(24 * time.Hour).Add(-2 * 24 * time.Hour)
	load := func(at time.Time) int {
		if h := at.Sub(at.Truncate(24 * time.Hour)); h >= 8*time.Hour && h < 10*time.Hour {
			return 1000
		}
		return 200
	}
	var hist strings.Builder
	hist.WriteString("# TYPE offered_load gauge\n")
	for at := day.Add(-9 * 24 * time.Hour); !at.After(day.Add(12 * time.Hour)); at = at.Add(time.Minute) {
		fmt.Fprintf(&hist, "offered_load %d %d\n", load(at), at.Unix())
	}
	hist.WriteString("# EOF\n")
	srv := promtest.Start(t, nil, promtest.Options{History: hist.String()})
	t.Setenv(allow.EnvVar, "127.0.0.0/8")

	start, step := day.Add(6*time.Hour), day.Add(8*time.Hour)
	run := func(forecast string) (name string, steps []sim.Step, short int) {
		var out struct {
			Controller string
			Steps      []sim.Step
		}
		args := []string{"--from-prometheus", srv.URL, "--query", "offered_load", "--start", start.Format(time.RFC3339),
			"--end", day.Add(11 * time.Hour).Format(time.RFC3339), "--step", "1m", "--saturation", strconv.FormatFloat(1000.0/7, 'g', -1, 64),
			"--max-replicas", "24", "--controller", "barometer", "--delay", "3", "--forecast", forecast, "--json"}
		if err := json.Unmarshal([]byte(simulate(t, args...)), &out); err != nil {
			t.Fatal(err)
		}
		for _, st := range out.Steps {
			if st.Ready < st.Required {
				short++
			}
		}
		return out.Controller, out.Steps, short
	}
	onName, on, onShort := run("on")
	_, off, offShort := run("off")
	_, only, _ := run("only")
	if len(on) != 301 {
		t.Fatalf("%d turns, want 301 (five hours of minutes)", len(on))
	}
	if !strings.Contains(onName, "history from Prometheus") {
		t.Errorf("the setting %q does not say the history came from Prometheus", onName)
	}
	before := int(step.Sub(start)/time.Minute) - 1 // 07:59
	t.Logf("short turns: %d with the history's forecast, %d without; replicas at 07:59: %d and %d", onShort, offShort, on[before].Replicas, off[before].Replicas)
	if onShort >= offShort {
		t.Errorf("%d turns short with the forecast from the history, %d without: the history did not scale out ahead of the step", onShort, offShort)
	}
	if on[before].Replicas <= off[before].Replicas {
		t.Errorf("replicas at 07:59: %d with the forecast, %d without; want more ahead of the step", on[before].Replicas, off[before].Replicas)
	}
	if fmt.Sprint(only) != fmt.Sprint(off) {
		t.Error("--forecast only changed the run: the forecast-only mode must publish without acting")
	}
}
