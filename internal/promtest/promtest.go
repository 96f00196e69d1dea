// Package promtest starts a real Prometheus server for tests: Debian's
// prometheus binary (installed by .ci/install-prometheus.sh), run as a child
// process on a free loopback port with its own configuration and storage in
// the test's temporary directory, scraping the loopback targets the test
// gives it. It never uses a server the machine may already run (the Debian
// package's service listens on :9090); every test gets its own.
//
// When the binary is missing the test fails under CI (CI set and not
// "false"), so a CI that lost the package cannot go green by skipping, and
// is skipped with the install command elsewhere.
package promtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/internal/testbin"
	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

// BinaryEnv overrides where the prometheus binary is looked for.
const BinaryEnv = "BAROMETER_PROMETHEUS"

// InstallHint is what to run when the binary is missing.
const InstallHint = "bash .ci/install-prometheus.sh (apt-get install prometheus)"

// Target is one scrape target.
type Target struct {
	// URL is the target's metrics URL, e.g. http://127.0.0.1:41234/metrics.
	URL string
	// Labels are attached to every series scraped from the target, e.g.
	// {"pod": "replica-0"} to stand in for Kubernetes' pod label. job is
	// "test" unless set here.
	Labels map[string]string
}

// Options tune a server; the zero value is what most tests want.
type Options struct {
	// ScrapeInterval defaults to 1s, short enough that a test waits a
	// couple of seconds for two scrapes (one rate) of every target.
	ScrapeInterval time.Duration
	// Web secures the server's HTTP API (--web.config.file); nil serves
	// it open, over plain HTTP.
	Web *Web
	// History is OpenMetrics text (ending in "# EOF") the server starts
	// with, written into its storage as blocks by promtool (tsdb
	// create-blocks-from openmetrics) before it starts: days of the past,
	// which scraping would take days to gather. Empty: none.
	History string
}

// Web is what the server's web configuration requires of a client.
type Web struct {
	// CA issues the server's certificate for 127.0.0.1; the server then
	// serves only TLS. Nil: plain HTTP.
	CA *tlstest.CA
	// Users are the basic-auth users (name to password) the server
	// accepts; none means no basic auth. The harness adds one of its own,
	// for WaitFor and readiness, so a test can replace these freely.
	Users map[string]string
}

// Server is a running Prometheus.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:<port>, or https://
	// when Options.Web has a CA.
	URL string
	// API queries the server as the harness: it trusts the CA and holds
	// the harness's own basic-auth user.
	API v1.API

	web *webFiles
}

// Binary returns the prometheus binary to run, or fails or skips t when
// there is none (see the package comment).
func Binary(t testing.TB) string {
	t.Helper()
	return testbin.Need(t, lookup, InstallHint)
}

// lookup finds the binary: $BAROMETER_PROMETHEUS when set (and then only
// there), else $PATH, else Debian's /usr/bin/prometheus.
func lookup() (string, error) {
	return testbin.Find("prometheus", BinaryEnv, "prometheus", "/usr/bin/prometheus")
}

// Start runs a Prometheus scraping targets and waits until it is ready. It
// is stopped when the test ends.
func Start(t testing.TB, targets []Target, opts Options) *Server {
	t.Helper()
	bin := Binary(t)
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = time.Second
	}
	dir := t.TempDir()
	web, err := newWebFiles(t, dir, opts.Web)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	cfg, err := config(targets, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	// A port picked then freed can be taken by someone else before
	// Prometheus binds it; a start that fails for that is retried.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		data := filepath.Join(dir, fmt.Sprintf("data-%d", attempt))
		if opts.History != "" {
			if err := backfill(bin, dir, data, opts.History); err != nil {
				t.Fatal(err)
			}
		}
		srv, err := launch(t, bin, cfgPath, data, web)
		if err == nil {
			return srv
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("start prometheus: %v", lastErr)
	return nil
}

// config writes the configuration as JSON, which is YAML, so no quoting of
// URLs or labels can go wrong. One scrape job per target lets each keep
// its own scheme and path.
func config(targets []Target, opts Options) ([]byte, error) {
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	type scrapeConfig struct {
		JobName       string         `json:"job_name"`
		Scheme        string         `json:"scheme"`
		MetricsPath   string         `json:"metrics_path"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	jobs := make([]scrapeConfig, 0, len(targets))
	for i, tg := range targets {
		u, err := url.Parse(tg.URL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("target %q is not a URL", tg.URL)
		}
		labels := map[string]string{"job": "test"}
		for k, v := range tg.Labels {
			labels[k] = v
		}
		jobs = append(jobs, scrapeConfig{
			JobName: fmt.Sprintf("target-%d", i), Scheme: u.Scheme, MetricsPath: u.Path,
			StaticConfigs: []staticConfig{{Targets: []string{u.Host}, Labels: labels}},
		})
	}
	interval := model.Duration(opts.ScrapeInterval).String()
	return json.MarshalIndent(map[string]any{
		"global": map[string]string{
			"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval,
		},
		"scrape_configs": jobs,
	}, "", "  ")
}

func launch(t testing.TB, bin, cfgPath, dataDir string, web *webFiles) (*Server, error) {
	addr, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + dataDir,
		"--web.listen-address=" + addr,
		"--log.level=warn",
	}
	if web != nil {
		args = append(args, "--web.config.file="+web.path)
	}
	proc, err := testbin.Start(bin, args...)
	if err != nil {
		return nil, err
	}
	base, hc := "http://"+addr, http.DefaultClient
	if web != nil {
		base, hc = web.scheme+"://"+addr, web.client()
	}
	if err := waitReady(hc, base, proc.Exited(), 60*time.Second); err != nil {
		return nil, proc.Abort(err)
	}
	client, err := api.NewClient(api.Config{Address: base, Client: hc})
	if err != nil {
		return nil, proc.Abort(err)
	}
	proc.StopAtCleanup(t)
	return &Server{URL: base, API: v1.NewAPI(client), web: web}, nil
}

// waitReady polls /-/ready, which answers 200 once the TSDB is open and
// the server takes queries.
func waitReady(hc *http.Client, base string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second, Transport: hc.Transport}
	for {
		resp, err := client.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("prometheus exited before it was ready")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus not ready at %s after %v", base, timeout)
		}
	}
}

// WaitFor polls query until ok accepts its result, or fails t after timeout.
// Tests use it to wait until every target has been scraped (twice, for a
// rate) before reading through the source under test.
func (s *Server) WaitFor(t testing.TB, query string, timeout time.Duration, ok func(model.Vector) bool) model.Vector {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var (
		last model.Vector
		err  error
	)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var v model.Value
		v, _, _, err = s.API.Query(ctx, query, time.Time{})
		cancel()
		if vec, isVec := v.(model.Vector); err == nil && isVec {
			if last = vec; ok(vec) {
				return vec
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("prometheus: %q not satisfied after %v: last result %v, error %v", query, timeout, last, err)
	return nil
}

// WaitSeries waits until query returns at least n series.
func (s *Server) WaitSeries(t testing.TB, query string, n int, timeout time.Duration) model.Vector {
	t.Helper()
	return s.WaitFor(t, query, timeout, func(v model.Vector) bool { return len(v) >= n })
}

// backfill writes history into the storage directory data as blocks, with
// the promtool that ships beside the prometheus binary bin (else the one
// on $PATH).
func backfill(bin, dir, data, history string) error {
	tool := filepath.Join(filepath.Dir(bin), "promtool")
	if _, err := exec.LookPath(tool); err != nil {
		if tool, err = exec.LookPath("promtool"); err != nil {
			return fmt.Errorf("promtool, to write the history as blocks, not found beside %s or on $PATH: %w", bin, err)
		}
	}
	src := filepath.Join(dir, "history.om")
	if err := os.WriteFile(src, []byte(history), 0o600); err != nil {
		return err
	}
	out, err := exec.Command(tool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", src, data).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s tsdb create-blocks-from openmetrics: %w\n%s", tool, err, out)
	}
	return nil
}
