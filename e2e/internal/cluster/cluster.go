// Package cluster starts a small real Kubernetes control plane for the
// end-to-end suite: etcd, kube-apiserver, kube-controller-manager (only the
// deployment, replicaset, endpointslice, serviceaccount, serviceaccount-token,
// horizontal-pod-autoscaler, disruption and root-ca-certificate-publisher
// controllers), the KEDA operator and the KEDA metrics adapter behind the
// v1beta1.external.metrics.k8s.io APIService.
//
// Everything listens on loopback, except what the aggregator must reach:
// Endpoints and EndpointSlices refuse loopback addresses, so the adapter
// runs in the suite's own network namespace (NetNS) and the apiserver and
// the operator's metrics service listen on the host end of its veth pair.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/barometer-scaler/barometer/e2e/internal/mountns"
	"github.com/barometer-scaler/barometer/e2e/internal/proc"
)

const (
	frontProxyName = "front-proxy-client"
	kedaNamespace  = "keda"
)

// Config says where things are.
type Config struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// keda-operator and keda-adapter.
	BinDir string
	// CRDDir holds KEDA's CRDs (the module's config/crd/bases).
	CRDDir string
	// WorkDir receives certificates, etcd's data and the logs (WorkDir/logs).
	WorkDir string
	// NetNS is the namespace for the adapter.
	NetNS NetNS
	// HPASyncPeriod is the HPA controller's sync period.
	HPASyncPeriod time.Duration
	// HostsFile is the KEDA operator's /etc/hosts (the pod runner's, so
	// that a scalerAddress naming a Service resolves to its pods, as
	// cluster DNS would resolve it); empty leaves the operator this
	// machine's.
	HostsFile string
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// Cluster is a running control plane.
type Cluster struct {
	cfg Config

	// Kubeconfig is an admin kubeconfig file.
	Kubeconfig string
	// REST is the admin client configuration.
	REST *rest.Config
	// Client and Dynamic are admin clients.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// LogDir holds one log per process.
	LogDir string

	certs              *certs
	server             string // the apiserver's URL
	procs              []*proc.Proc
	netUp              bool
	etcdURL            string
	metricsServiceAddr string
}

// Up starts the control plane. On error everything it started is stopped.
func Up(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.HPASyncPeriod == 0 {
		cfg.HPASyncPeriod = 5 * time.Second
	}
	c = &Cluster{cfg: cfg, LogDir: filepath.Join(cfg.WorkDir, "logs")}
	defer func() {
		if err != nil {
			c.Down()
		}
	}()
	step := func(what string, f func() error) error {
		start := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		cfg.Logf("cluster: %-34s %6.1fs", what, time.Since(start).Seconds())
		return nil
	}
	for _, s := range []struct {
		what string
		f    func() error
	}{
		{"network namespace " + cfg.NetNS.Name, c.netns},
		{"certificates", c.makeCerts},
		{"etcd", func() error { return c.etcd(ctx) }},
		{"kube-apiserver", func() error { return c.apiserver(ctx) }},
		{"kube-controller-manager", func() error { return c.controllerManager(ctx) }},
		{"KEDA CRDs and objects", func() error { return c.kedaObjects(ctx) }},
		{"KEDA operator", c.kedaOperator},
		{"KEDA metrics adapter", func() error { return c.kedaAdapter(ctx) }},
	} {
		if err := step(s.what, s.f); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Down stops every process in reverse order and removes the namespace.
func (c *Cluster) Down() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(10 * time.Second)
	}
	c.procs = nil
	if c.netUp {
		c.cfg.NetNS.Down()
		c.netUp = false
	}
}

// Check returns an error naming any control-plane process that has exited.
func (c *Cluster) Check() error {
	var errs []error
	for _, p := range c.procs {
		if done, err := p.Exited(); done {
			errs = append(errs, fmt.Errorf("%s exited (%v); log tail:\n%s", p.Name, err, p.Tail(3000)))
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) netns() error {
	if err := c.cfg.NetNS.Up(); err != nil {
		return err
	}
	c.netUp = true
	return nil
}

func (c *Cluster) makeCerts() error {
	var err error
	c.certs, err = makeCerts(filepath.Join(c.cfg.WorkDir, "pki"), c.cfg.NetNS)
	return err
}

// start starts a process of the control plane; with hosts, in a mount
// namespace where that file is /etc/hosts and no name lookup leaves the
// machine.
func (c *Cluster) start(s proc.Spec, hosts ...string) (*proc.Proc, error) {
	if s.LogDir == "" {
		s.LogDir = c.LogDir
	}
	if !filepath.IsAbs(s.Path) {
		s.Path = filepath.Join(c.cfg.BinDir, s.Path)
	}
	if len(hosts) > 0 && hosts[0] != "" {
		ns, err := mountns.Resolver(filepath.Join(c.cfg.WorkDir, s.Name), hosts[0])
		if err != nil {
			return nil, err
		}
		if s, err = mountns.Wrap(s, ns); err != nil {
			return nil, err
		}
	}
	p, err := proc.Start(s)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

func (c *Cluster) etcd(ctx context.Context) error {
	client, peer := FreePort("127.0.0.1"), FreePort("127.0.0.1")
	url := "http://127.0.0.1:" + strconv.Itoa(client)
	p, err := c.start(proc.Spec{Name: "etcd", Path: "etcd", Args: []string{
		"-data-dir", filepath.Join(c.cfg.WorkDir, "etcd"),
		"-listen-client", url,
		"-listen-peer", "http://127.0.0.1:" + strconv.Itoa(peer),
	}})
	if err != nil {
		return err
	}
	c.etcdURL = url
	return Poll(ctx, 60*time.Second, "etcd healthy", func(ctx context.Context) error {
		if done, _ := p.Exited(); done {
			return Permanent(fmt.Errorf("etcd exited:\n%s", p.Tail(2000)))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /health: %s", resp.Status)
		}
		return nil
	})
}

func (c *Cluster) apiserver(ctx context.Context) error {
	n, ct := c.cfg.NetNS, c.certs
	port := FreePort(n.HostIP)
	server := "https://" + net.JoinHostPort(n.HostIP, strconv.Itoa(port))
	p, err := c.start(proc.Spec{Name: "kube-apiserver", Path: "kube-apiserver", Args: []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=" + n.HostIP,
		"--advertise-address=" + n.HostIP,
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + ct.apiCert,
		"--tls-private-key-file=" + ct.apiKey,
		"--client-ca-file=" + ct.path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + ct.saPub,
		"--service-account-signing-key-file=" + ct.saKey,
		"--service-cluster-ip-range=" + n.ServiceNet,
		"--authorization-mode=RBAC",
		"--requestheader-client-ca-file=" + ct.frontCA,
		"--requestheader-allowed-names=" + frontProxyName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + ct.proxyCert,
		"--proxy-client-key-file=" + ct.proxyKey,
		"--enable-aggregator-routing=true",
		"--cert-dir=" + filepath.Join(c.cfg.WorkDir, "apiserver"),
		"--profiling=false",
		"--v=1",
	}})
	if err != nil {
		return err
	}
	c.server = server
	c.Kubeconfig = filepath.Join(c.cfg.WorkDir, "admin.kubeconfig")
	if err := ct.kubeconfig(c.Kubeconfig, server); err != nil {
		return err
	}
	if c.REST, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return err
	}
	c.REST.QPS, c.REST.Burst = 100, 200
	if c.Client, err = kubernetes.NewForConfig(c.REST); err != nil {
		return err
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.REST); err != nil {
		return err
	}
	return Poll(ctx, 120*time.Second, "kube-apiserver ready", func(ctx context.Context) error {
		if done, _ := p.Exited(); done {
			return Permanent(fmt.Errorf("kube-apiserver exited:\n%s", p.Tail(4000)))
		}
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%v %s", err, body)
		}
		return nil
	})
}

func (c *Cluster) controllerManager(ctx context.Context) error {
	ct := c.certs
	p, err := c.start(proc.Spec{Name: "kube-controller-manager", Path: "kube-controller-manager", Args: []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(FreePort("127.0.0.1")),
		"--cert-dir=" + filepath.Join(c.cfg.WorkDir, "kcm"),
		"--controllers=deployment-controller,replicaset-controller,endpointslice-controller,serviceaccount-controller,serviceaccount-token-controller,horizontal-pod-autoscaler-controller,disruption-controller,root-ca-certificate-publisher-controller",
		"--horizontal-pod-autoscaler-sync-period=" + c.cfg.HPASyncPeriod.String(),
		"--service-account-private-key-file=" + ct.saKey,
		"--root-ca-file=" + ct.path("ca.crt"),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--profiling=false",
		"--v=1",
	}})
	if err != nil {
		return err
	}
	// The serviceaccount controller creates "default" in every namespace;
	// seeing it proves the controller manager is up and allowed to act.
	return Poll(ctx, 120*time.Second, "kube-controller-manager acting", func(ctx context.Context) error {
		if done, _ := p.Exited(); done {
			return Permanent(fmt.Errorf("kube-controller-manager exited:\n%s", p.Tail(4000)))
		}
		_, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", getOpts)
		return err
	})
}

func (c *Cluster) kedaOperator() error {
	n, ct := c.cfg.NetNS, c.certs
	c.metricsServiceAddr = net.JoinHostPort(n.HostIP, strconv.Itoa(FreePort(n.HostIP)))
	_, err := c.start(proc.Spec{Name: "keda-operator", Path: filepath.Join(c.cfg.BinDir, "keda-operator"),
		Env: c.kedaEnv(),
		Args: []string{
			"--leader-elect=false",
			"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(FreePort("127.0.0.1")),
			"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(FreePort("127.0.0.1")),
			"--metrics-service-bind-address=" + c.metricsServiceAddr,
			"--enable-cert-rotation=false",
			"--cert-dir=" + ct.kedaDir,
			"--ca-dir=" + ct.path("keda-ca-dir"),
			"--zap-log-level=info",
			"--zap-encoder=console",
		}}, c.cfg.HostsFile)
	return err
}

func (c *Cluster) kedaEnv() []string {
	return []string{
		"KUBECONFIG=" + c.Kubeconfig,
		"WATCH_NAMESPACE=",
		"POD_NAMESPACE=" + kedaNamespace,
		"KEDA_CLUSTER_OBJECT_NAMESPACE=" + kedaNamespace,
	}
}

func (c *Cluster) kedaAdapter(ctx context.Context) error {
	n, ct := c.cfg.NetNS, c.certs
	p, err := c.start(proc.Spec{Name: "keda-adapter", Path: "keda-adapter", NetNS: n.Name,
		Env: c.kedaEnv(),
		Args: []string{
			"--bind-address=" + n.NSIP,
			"--secure-port=" + strconv.Itoa(adapterPort),
			"--cert-dir=" + ct.kedaDir,
			"--tls-cert-file=" + filepath.Join(ct.kedaDir, "tls.crt"),
			"--tls-private-key-file=" + filepath.Join(ct.kedaDir, "tls.key"),
			"--lister-kubeconfig=" + c.Kubeconfig,
			"--authentication-kubeconfig=" + c.Kubeconfig,
			"--authorization-kubeconfig=" + c.Kubeconfig,
			"--metrics-service-address=" + c.metricsServiceAddr,
			"--metrics-service-grpc-authority=keda-operator.keda.svc.cluster.local",
			"--port=8080", // its own /metrics, inside the namespace
			"--zap-log-level=info",
			"--zap-encoder=console",
		}})
	if err != nil {
		return err
	}
	return Poll(ctx, 180*time.Second, "external metrics API available", func(ctx context.Context) error {
		for _, q := range c.procs {
			if q.Name == "keda-operator" || q == p {
				if done, _ := q.Exited(); done {
					return Permanent(fmt.Errorf("%s exited:\n%s", q.Name, q.Tail(4000)))
				}
			}
		}
		return c.apiServiceAvailable(ctx)
	})
}

// APIServer is the apiserver's host:port.
func (c *Cluster) APIServer() string { return strings.TrimPrefix(c.server, "https://") }

// adapterPort is the adapter's secure port inside the namespace.
const adapterPort = 6443

// WriteEnv writes a file of shell exports for poking at the cluster by hand
// while a run is paused (E2E_HOLD).
func (c *Cluster) WriteEnv(path string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "export KUBECONFIG=%s\n", c.Kubeconfig)
	for _, p := range c.procs {
		fmt.Fprintf(&b, "# %s pid %d log %s\n", p.Name, p.Pid(), p.LogPath)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
