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
	for _, want := range []string{"naive", "KPA, Knative defaults", "maxhold, tuned: W=", "Barometer, profile budgeted (default), deployed, recommended behavior", "Barometer, profile responsive, deployed", "Barometer, profile original, deployed", "queue", "fixed"} {
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

func TestPromSeriesFillsGaps(t *testing.T) {
	start := time.Unix(1000, 0)
	ss := &model.SampleStream{Values: []model.SamplePair{
		{Timestamp: model.TimeFromUnix(1010), Value: 5},
		{Timestamp: model.TimeFromUnix(1030), Value: 7},
	}}
	s, err := promSeries(ss, start, start.Add(40*time.Second), 10*time.Second, "p")
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{5, 5, 5, 7, 7}
	if fmt.Sprint(s.Load) != fmt.Sprint(want) {
		t.Errorf("load %v, want %v", s.Load, want)
	}
}
