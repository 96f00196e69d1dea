package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/internal/testbin"
)

type prometheus struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startPrometheus runs Debian's prometheus on a loopback port with the
// query limits of o, scraping each URL as job w<i> with a pod label.
func startPrometheus(dir string, urls []string, o options) (*prometheus, error) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return nil, fmt.Errorf("prometheus not installed (bash .ci/install-prometheus.sh): %w", err)
	}
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var jobs []map[string]any
	for i, raw := range urls {
		host := strings.TrimSuffix(strings.TrimPrefix(raw, "http://"), "/metrics")
		jobs = append(jobs, map[string]any{"job_name": fmt.Sprint("w", i),
			"static_configs": []static{{Targets: []string{host}, Labels: map[string]string{"pod": fmt.Sprint("w", i, "-0")}}}})
	}
	every := o.interval.String()
	cfg, _ := json.Marshal(map[string]any{
		"global":         map[string]string{"scrape_interval": every, "scrape_timeout": every, "evaluation_interval": every},
		"scrape_configs": jobs,
	})
	path := filepath.Join(dir, "prometheus.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return nil, err
	}
	addr, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn",
		fmt.Sprintf("--query.max-concurrency=%d", o.maxConcurrency), "--query.timeout="+model.Duration(o.queryTimeout).String())
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &prometheus{url: "http://" + addr, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.exited) }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(p.url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
	}
	p.stop()
	return nil, errors.New("prometheus not ready within 30s")
}

func (p *prometheus) stop() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// waitSeries waits until q answers at least n series.
func (p *prometheus) waitSeries(q string, n int, within time.Duration) error {
	client, err := api.NewClient(api.Config{Address: p.url})
	if err != nil {
		return err
	}
	prom := v1.NewAPI(client)
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, _, _, err := prom.Query(ctx, q, time.Now())
		cancel()
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: fewer than %d series after %v (err %v)", q, n, within, err)
		}
		time.Sleep(time.Second)
	}
}
