package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// startPrometheus runs Debian's prometheus (as internal/promtest does:
// .ci/install-prometheus.sh installs it) on a loopback port, scraping each
// URL every second with a pod label, until the returned stop.
func startPrometheus(ctx context.Context, dir string, urls []string) (addr string, stop func(), err error) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return "", nil, fmt.Errorf("prometheus not installed (bash .ci/install-prometheus.sh): %w", err)
	}
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var jobs []map[string]any
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return "", nil, err
		}
		jobs = append(jobs, map[string]any{"job_name": fmt.Sprint("replica-", i), "metrics_path": u.Path,
			"static_configs": []static{{Targets: []string{u.Host}, Labels: map[string]string{"pod": fmt.Sprint("replica-", i)}}}})
	}
	cfg, _ := json.Marshal(map[string]any{
		"global":         map[string]string{"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
		"scrape_configs": jobs,
	})
	path := filepath.Join(dir, "prometheus.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return "", nil, err
	}
	if addr, err = freeAddr(); err != nil {
		return "", nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"),
		"--web.listen-address="+addr, "--log.level=warn")
	// One core is plenty for two targets, and the machine is shared.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr, stop, nil
			}
		}
	}
	stop()
	return "", nil, fmt.Errorf("prometheus not ready within 30s; see %s", logf.Name())
}
