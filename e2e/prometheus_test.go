package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/barometer-scaler/barometer/e2e/internal/cluster"
	"github.com/barometer-scaler/barometer/e2e/internal/proc"
)

// startPrometheus runs Debian's prometheus on the host end of the veth
// pair, scraping every haSample the ready pods of the Service named job in
// the suite's namespace. Debian builds Prometheus without its Kubernetes
// discovery, so the suite plays it: it writes the Service's ready
// endpoints, from its EndpointSlices, into file_sd files every second
// (writeTargets), each with its pod's name as the pod label (the prometheus source's
// default replicaLabel). It returns the server's URL; cleanup stops it.
func startPrometheus(t *testing.T, job string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus: %v (e2e/run installs Debian's package)", err)
	}
	dir := filepath.Join(workDir, "prometheus-"+job)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	targets := filepath.Join(dir, "targets")
	if err := os.MkdirAll(targets, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeTargets(t.Context(), job, targets); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for sleepCtx(ctx, time.Second) == nil {
			_ = writeTargets(ctx, job, targets)
		}
	}()
	config := fmt.Sprintf(`global: {scrape_interval: %s, scrape_timeout: 2s}
scrape_configs:
  - job_name: %s
    file_sd_configs: [{files: [%s/*.json]}]
`, haSample, job, targets)
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	host := cluster.DefaultNetNS().HostIP
	addr := net.JoinHostPort(host, strconv.Itoa(cluster.FreePort(host)))
	p, err := proc.Start(proc.Spec{Name: "prometheus-" + job, Path: bin, LogDir: env.cluster.LogDir, Args: []string{
		"--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr, "--log.level=warn",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(10 * time.Second) })
	url := "http://" + addr
	if err := waitOK(t.Context(), p, "prometheus ready", url+"/-/ready"); err != nil {
		t.Fatal(err)
	}
	return url
}

// writeTargets keeps one file_sd file per ready endpoint of the Service
// (from its EndpointSlices) in dir, named by its pod: a file is written
// when its pod turns ready and removed when it no longer is. One file per
// target, never rewritten, because Prometheus names a file's target groups
// by their index: a file whose groups change order restarts their scrapes
// (writing staleness markers), and for a moment the series are gone.
func writeTargets(ctx context.Context, service, dir string) error {
	list, err := env.cluster.Client.DiscoveryV1().EndpointSlices(namespace).List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return err
	}
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	want := map[string][]byte{}
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if !deref(e.Conditions.Ready) || e.TargetRef == nil || len(e.Addresses) == 0 || len(s.Ports) == 0 || s.Ports[0].Port == nil {
				continue
			}
			data, err := json.Marshal([]group{{
				Targets: []string{net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*s.Ports[0].Port)))},
				Labels:  map[string]string{"pod": e.TargetRef.Name, "namespace": namespace},
			}})
			if err != nil {
				return err
			}
			want[e.TargetRef.Name+".json"] = data
		}
	}
	have, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for name, data := range want {
		path := filepath.Join(dir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := os.WriteFile(path+".new", data, 0o644); err != nil {
			return err
		}
		if err := os.Rename(path+".new", path); err != nil {
			return err
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
