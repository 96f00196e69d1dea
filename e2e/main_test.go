package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/barometer-scaler/barometer/e2e/internal/cluster"
	"github.com/barometer-scaler/barometer/e2e/internal/podrunner"
)

// The suite is configured by e2e/run through the environment; without it
// (a plain `go test ./...`) every scenario skips.
var (
	binDir     = os.Getenv("E2E_BIN_DIR")
	workDir    = os.Getenv("E2E_WORK_DIR")
	resultsDir = os.Getenv("E2E_RESULTS_DIR")
	crdDir     = os.Getenv("E2E_CRD_DIR")
)

const (
	namespace = "e2e"
	nodeName  = "e2e-node"
)

// env is the running suite, shared by every scenario.
var env struct {
	up      bool
	cluster *cluster.Cluster
	runner  *podrunner.Runner
	hosts   string // the hosts file the pod runner keeps
	podPort int    // every pod's port, on its own address in the pod network
	scaler  *scaler
	// scalerKubeconfig is the scalers' kubeconfig: a user with only
	// scalerRules.
	scalerKubeconfig string
	// kubeTargets and victimHints say the scaler built has k8s:// targets
	// and the victimHints trigger key (its `scaler keys` reference names
	// them): the kube scenarios skip, saying so, on a scaler without.
	kubeTargets, victimHints bool
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if binDir == "" || workDir == "" {
		fmt.Println("e2e: E2E_BIN_DIR and E2E_WORK_DIR are unset: run e2e/run; scenarios skip")
		return m.Run()
	}
	if resultsDir == "" {
		resultsDir = filepath.Join(workDir, "results")
	}
	ctx := context.Background()
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Printf("%7.1fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	// The hosts file exists before the KEDA operator, which reads it as
	// its /etc/hosts; the pod runner rewrites it in place.
	env.hosts = filepath.Join(workDir, "hosts")
	if err := os.WriteFile(env.hosts, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		fmt.Println("e2e: hosts file:", err)
		return 1
	}
	c, err := cluster.Up(ctx, cluster.Config{
		BinDir: binDir, CRDDir: crdDir, WorkDir: workDir,
		NetNS:         cluster.DefaultNetNS(),
		HPASyncPeriod: hpaSyncPeriod,
		HostsFile:     env.hosts,
		Logf:          logf,
	})
	if err != nil {
		fmt.Println("e2e: cluster:", err)
		dumpLogs(filepath.Join(workDir, "logs"))
		return 1
	}
	defer c.Down()
	env.cluster = c
	_ = c.WriteEnv(filepath.Join(workDir, "env.sh"))

	podNet := netip.MustParsePrefix(cluster.DefaultNetNS().PodNet)
	// A port free on the pods' addresses, so no listener elsewhere on the
	// machine (a wildcard one included) can be in the way.
	env.podPort = cluster.FreePort(podNet.Addr().Next().String())
	r, err := podrunner.Start(ctx, podrunner.Config{
		Client: c.Client, Node: nodeName, DemoBin: filepath.Join(binDir, "demo-workload"),
		LogDir: c.LogDir, HostsFile: env.hosts, Port: env.podPort, PodNet: podNet,
		ServiceNet: netip.MustParsePrefix(cluster.DefaultNetNS().ServiceNet),
		Images:     map[string]string{scalerImage: filepath.Join(binDir, "scaler")},
		APIServer:  c.APIServer(), WorkDir: filepath.Join(workDir, "containers"),
		Logf: logf,
	})
	if err != nil {
		fmt.Println("e2e: pod runner:", err)
		return 1
	}
	defer r.Stop()
	env.runner = r

	if err := setupNamespace(ctx); err != nil {
		fmt.Println("e2e:", err)
		return 1
	}
	env.scalerKubeconfig, err = c.UserKubeconfig(ctx, "barometer-scaler", scalerRules)
	if err != nil {
		fmt.Println("e2e: the scalers' kubeconfig:", err)
		return 1
	}
	if keys, err := exec.Command(filepath.Join(binDir, "scaler"), "keys").Output(); err != nil {
		fmt.Println("e2e: scaler keys:", err)
		return 1
	} else {
		env.kubeTargets = strings.Contains(string(keys), "k8s://")
		env.victimHints = strings.Contains(string(keys), "`victimHints`")
		logf("scaler: k8s:// targets %v, victimHints %v", env.kubeTargets, env.victimHints)
	}
	env.scaler, err = startScaler(ctx, "scaler", nil)
	if err != nil {
		fmt.Println("e2e:", err)
		return 1
	}
	defer env.scaler.stop()
	logf("suite ready")
	env.up = true

	code := m.Run()
	if err := c.Check(); err != nil {
		fmt.Println("e2e: a control-plane process died during the run:", err)
		code = 1
	}
	writeSummary(logf)
	writeDiscoveryComparison()
	if code != 0 {
		dumpLogs(c.LogDir)
	}
	if hold := os.Getenv("E2E_HOLD"); hold != "" {
		logf("E2E_HOLD set: keeping the cluster for %s (source %s)", hold, filepath.Join(workDir, "env.sh"))
		if d, err := time.ParseDuration(hold); err == nil {
			time.Sleep(d)
		}
	}
	return code
}

func setupNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := env.cluster.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	// Pods are admitted once the serviceaccount controller has made the
	// namespace's default ServiceAccount.
	return cluster.Poll(ctx, 60*time.Second, "default ServiceAccount in "+namespace, func(ctx context.Context) error {
		_, err := env.cluster.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// skipUnlessUp skips a scenario outside e2e/run.
func skipUnlessUp(t *testing.T) {
	t.Helper()
	if !env.up {
		t.Skip("the e2e environment is not up (run e2e/run)")
	}
}

// skipUnlessKube skips a scenario the scaler built cannot run: one that
// needs k8s:// targets, and with hints also the victimHints key.
func skipUnlessKube(t *testing.T, hints bool) {
	t.Helper()
	skipUnlessUp(t)
	if !env.kubeTargets {
		t.Skip("the scaler has no k8s:// targets (its `scaler keys` does not name them)")
	}
	if hints && !env.victimHints {
		t.Skip("the scaler has no victimHints trigger key (its `scaler keys` does not name it)")
	}
}

// measurement is one timed reaction a scenario observed.
type measurement struct {
	Scenario string  `json:"scenario"`
	What     string  `json:"what"`
	Seconds  float64 `json:"seconds"`
}

var measured struct {
	sync.Mutex
	list []measurement
}

func measure(t *testing.T, what string, d time.Duration) {
	t.Helper()
	t.Logf("measured: %s: %.1fs", what, d.Seconds())
	measured.Lock()
	measured.list = append(measured.list, measurement{Scenario: t.Name(), What: what, Seconds: d.Seconds()})
	measured.Unlock()
}

func writeSummary(logf func(string, ...any)) {
	measured.Lock()
	list := slices.Clone(measured.list)
	measured.Unlock()
	slices.SortStableFunc(list, func(a, b measurement) int { return strings.Compare(a.Scenario, b.Scenario) })
	var b strings.Builder
	b.WriteString("| scenario | reaction | seconds |\n| --- | --- | ---: |\n")
	for _, m := range list {
		fmt.Fprintf(&b, "| %s | %s | %.1f |\n", m.Scenario, m.What, m.Seconds)
	}
	fmt.Print("\n=== e2e: time from change to replica change\n" + b.String())
	_ = os.MkdirAll(resultsDir, 0o755)
	_ = os.WriteFile(filepath.Join(resultsDir, "summary.md"), []byte("# Barometer e2e run "+time.Now().UTC().Format(time.RFC3339)+"\n\n"+b.String()), 0o644)
	data, _ := json.MarshalIndent(list, "", "  ")
	_ = os.WriteFile(filepath.Join(resultsDir, "summary.json"), data, 0o644)
	logf("results in %s", resultsDir)
}

// dumpLogs prints the tail of every process log, for a failed run in CI.
func dumpLogs(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Printf("\n----- tail of %s -----\n%s\n", f, data)
	}
}
