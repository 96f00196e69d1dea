package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/barometer-scaler/barometer/e2e/internal/cluster"
	"github.com/barometer-scaler/barometer/e2e/internal/mountns"
	"github.com/barometer-scaler/barometer/e2e/internal/proc"
)

// victimHintsEnv is the scaler-wide switch of victim hints (off by
// default in the scaler; every scaler of the suite has it on, and only a
// trigger with victimHints: true uses it).
const victimHintsEnv = "BAROMETER_VICTIM_HINTS"

// scalerRules are the rights the scalers' user has: what a k8s:// target
// reads (EndpointSlices and Services) and what victim hints write (pod
// annotations). Nothing else: the suite proves the scaler needs no more.
var scalerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
}

// scaler is one Barometer process. It runs in its own mount namespace,
// where /etc/hosts is the pod runner's hosts file (so a dns+http:// target
// of "<app>.e2e.svc" expands to the app's ready pods, as a headless Service
// would) and /etc/resolv.conf names only 127.0.0.1, so a name missing from
// the hosts file never leaves the machine (mountns.Resolver).
type scaler struct {
	name string
	grpc string // host:port
	http string // host:port
	// otlp is the OTLP receiver's gRPC address, otlpToken the file of the
	// token that may push for the suite's namespace.
	otlp, otlpToken string
	spec            proc.Spec
	p               *proc.Proc
}

// scalerTLS is the TLS material of a scaler that serves gRPC over TLS.
type scalerTLS struct {
	certFile, keyFile, clientCAFile string
}

func startScaler(ctx context.Context, name string, tls *scalerTLS) (*scaler, error) {
	dir := filepath.Join(workDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &scaler{
		name:      name,
		grpc:      net.JoinHostPort("127.0.0.1", strconv.Itoa(cluster.FreePort("127.0.0.1"))),
		http:      net.JoinHostPort("127.0.0.1", strconv.Itoa(cluster.FreePort("127.0.0.1"))),
		otlp:      net.JoinHostPort("127.0.0.1", strconv.Itoa(cluster.FreePort("127.0.0.1"))),
		otlpToken: filepath.Join(dir, "otlp.token"),
	}
	// The OTLP receiver: one token credential, for the suite's namespace
	// only; the demo workload's pods push with it.
	if err := os.WriteFile(s.otlpToken, []byte(name+"-otlp-token\n"), 0o644); err != nil {
		return nil, err
	}
	otlpCreds := filepath.Join(dir, "otlp-credentials.yaml")
	if err := os.WriteFile(otlpCreds, []byte("credentials: [{name: e2e, token_file: otlp.token, namespaces: ["+namespace+"]}]\n"), 0o644); err != nil {
		return nil, err
	}
	envs := []string{
		"BAROMETER_GRPC_ADDR=" + s.grpc,
		"BAROMETER_HTTP_ADDR=" + s.http,
		// The pods' own addresses (the pod network) besides names: a
		// target that yields pod addresses is checked against them.
		"BAROMETER_ALLOWED_TARGETS=*.svc,127.0.0.0/8," + cluster.DefaultNetNS().PodNet,
		"BAROMETER_SAMPLE_INTERVAL=1s",
		"BAROMETER_SHUTDOWN_TIMEOUT=5s",
		"BAROMETER_LOG_LEVEL=debug",
		"GODEBUG=netdns=go",
		// k8s:// targets and victim hints: an RBAC-limited user
		// (scalerRules), and the scaler-wide switch that lets a trigger's
		// victimHints take effect.
		"BAROMETER_KUBECONFIG=" + env.scalerKubeconfig,
		victimHintsEnv + "=true",
		"BAROMETER_OTLP_GRPC_ADDR=" + s.otlp,
		"BAROMETER_OTLP_CREDENTIALS=" + otlpCreds,
	}
	if tls != nil {
		envs = append(envs,
			"BAROMETER_TLS_CERT_FILE="+tls.certFile,
			"BAROMETER_TLS_KEY_FILE="+tls.keyFile,
			"BAROMETER_TLS_CLIENT_CA_FILE="+tls.clientCAFile)
	}
	ns, err := mountns.Resolver(dir, env.hosts)
	if err != nil {
		return nil, err
	}
	s.spec, err = mountns.Wrap(proc.Spec{Name: name, Path: filepath.Join(binDir, "scaler"), LogDir: env.cluster.LogDir, Env: envs}, ns)
	if err != nil {
		return nil, err
	}
	return s, s.start(ctx)
}

func (s *scaler) start(ctx context.Context) error {
	p, err := proc.Start(s.spec)
	if err != nil {
		return err
	}
	s.p = p
	return waitOK(ctx, p, s.name+" live", "http://"+s.http+"/livez")
}

// waitOK waits until url answers 200, failing at once if p exits.
func waitOK(ctx context.Context, p *proc.Proc, what, url string) error {
	return cluster.Poll(ctx, 60*time.Second, what, func(ctx context.Context) error {
		if done, err := p.Exited(); done {
			return cluster.Permanent(fmt.Errorf("exited (%v):\n%s", err, p.Tail(3000)))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	})
}

// kill ends the scaler at once, as a crash or an evicted pod would.
func (s *scaler) kill() { s.p.Kill() }

func (s *scaler) stop() {
	if s.p != nil {
		s.p.Stop(10 * time.Second)
	}
}

// signal returns the scaleValue the scaler serves for a ScaledObject, or
// NaN when it serves none (yet).
func (s *scaler) signal(ctx context.Context, name string) float64 {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.http+"/scale/"+namespace+"/"+name, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return math.NaN()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return math.NaN()
	}
	var v struct {
		ScaleValue float64 `json:"scaleValue"`
	}
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return math.NaN()
	}
	return v.ScaleValue
}

// dataAge returns the dataAgeSeconds the scaler serves for a ScaledObject:
// how old the data of its newest sample is, by the data's own time.
func (s *scaler) dataAge(ctx context.Context, name string) (float64, bool) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.http+"/scale/"+namespace+"/"+name, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var v struct {
		DataAge *float64 `json:"dataAgeSeconds"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil || v.DataAge == nil {
		return 0, false
	}
	return *v.DataAge, true
}
