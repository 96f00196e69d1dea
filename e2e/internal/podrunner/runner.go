// Package podrunner plays the kubelet for the end-to-end suite. It registers
// a Node, binds to it the pods that name no node (the scheduler's part),
// watches the Pods bound to it, and for each one starts a process on its own
// address in the pod network (Config.PodNet), reports the Pod Running and
// Ready with that address as its podIP, and when the Pod is deleted stops
// the process and confirms the deletion.
//
// The process is the demo workload (on one port, with the container's args
// after the runner's own -listen and -replicas 1, and its environment), or,
// for an image Config.Images names, that program run as a container
// (container.go: its volumes, its service account token, its readiness
// probe, a mount namespace of its own).
//
// The pod addresses are not loopback: kube-apiserver refuses loopback and
// link-local addresses in EndpointSlices, and the EndpointSlice controller
// copies every pod's podIP into its Service's slices. The suite makes the
// whole pod network local to this machine (a "local" route, see
// cluster.NetNS), so any address in it can be bound without adding it to an
// interface.
//
// A graceful deletion (deletionTimestamp set, the Pod still in the API) is
// played the way a kubelet plays it: the pod stays Ready and its process
// serves through its preStop hook (a container's lifecycle.preStop.sleep,
// bounded by the deletion's grace period), so the EndpointSlice controller
// publishes it as serving and terminating; then the process is stopped (a
// container gets SIGTERM and the grace period) and the deletion confirmed
// with grace 0.
//
// It also plays the Services in front of the pods (services.go): a
// workload's request rate is set as a total (SetLoad) and spread evenly over
// its ready pods, as a load balancer would, or set per pod (SetPodLoads);
// a hosts file names every ready pod of a workload under
// "<app>.<namespace>.svc", and every Service with a selector by its name:
// its ready pods when it is headless, its ClusterIP otherwise, on which the
// runner proxies connections to the ready pods (the suite's kube-proxy).
// The scalers and the KEDA operator, each in its own mount namespace, read
// that file as cluster DNS. A terminating pod gets no share of new load and
// leaves the hosts file and the proxy, as it leaves a Service's ready
// endpoints; it keeps the load it last had (its in-flight work) until it
// stops.
package podrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/barometer-scaler/barometer/e2e/internal/proc"
)

// AppLabel is the pod label that names a workload.
const AppLabel = "app"

// Config configures a Runner.
type Config struct {
	Client kubernetes.Interface
	// Node is the Node to register and run the pods of.
	Node string
	// DemoBin is the demo-workload binary.
	DemoBin string
	// LogDir receives one log per pod.
	LogDir string
	// HostsFile is rewritten in place (never replaced: it is bind-mounted)
	// on every change of the ready pods.
	HostsFile string
	// Port is every pod's port; 9100 when zero.
	Port int
	// PodNet is where pod addresses come from; every address in it must be
	// bindable on this machine. Its first address and its last are never
	// given to a pod.
	PodNet netip.Prefix
	// ServiceNet is where the apiserver hands out ClusterIPs; every address
	// in it must be bindable on this machine. A ClusterIP Service's
	// address in it is named in the hosts file and proxied to the
	// Service's ready pods (services.go). Zero: ClusterIP Services are not
	// played.
	ServiceNet netip.Prefix
	// Images maps a container image, by its name without tag or digest,
	// to the program the runner runs as that image's entrypoint. A pod
	// whose first container's image is listed runs as a container
	// (container.go); every other pod runs the demo workload.
	Images map[string]string
	// APIServer (host:port) is the apiserver a container's in-cluster
	// configuration reaches: KUBERNETES_SERVICE_HOST and _PORT.
	APIServer string
	// WorkDir holds each container's volumes and scratch directory.
	WorkDir string
	// Logf reports pod events.
	Logf func(format string, args ...any)
}

// Runner is a running kubelet stand-in.
type Runner struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	http   *http.Client

	mu       sync.Mutex
	pods     map[types.UID]*pod
	ips      map[netip.Addr]bool
	lastIP   netip.Addr
	traffic  map[string]*traffic // by workload key
	services map[string]*service // by namespace/name

	applyMu sync.Mutex // one rebalance at a time, in order
}

type pod struct {
	uid       types.UID
	namespace string
	name      string
	app       string
	labels    map[string]string
	// ports are the first container's named ports.
	ports map[string]int32
	// program is the container's program (Config.Images), "" for the
	// demo workload.
	program string
	ip      string
	addr    string
	ready   bool
	readyAt time.Time
	// terminating is set on a graceful deletion: the process still
	// serves, but gets no new load and is out of the hosts file.
	terminating bool
	// terminate is closed (once) on a graceful deletion; hold is how long
	// the process goes on serving after it (its preStop sleep, bounded by
	// the deletion's grace period).
	terminate chan struct{}
	hold      time.Duration
	// grace is how long a stopping container has between SIGTERM and
	// SIGKILL: the deletion's grace period.
	grace  time.Duration
	cancel context.CancelFunc
	done   chan struct{}
}

type traffic struct {
	rps    float64
	splits float64
	// perPod, when not nil, replaces the spread of rps: each ready pod
	// named gets its rate, every other ready pod none.
	perPod map[string]float64
}

// Start registers the Node and starts watching its pods.
func Start(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.Port == 0 {
		cfg.Port = 9100
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if !cfg.PodNet.IsValid() || !cfg.PodNet.Addr().Is4() || cfg.PodNet.Bits() > 30 {
		return nil, fmt.Errorf("pod network %v: need an IPv4 prefix of at least 4 addresses", cfg.PodNet)
	}
	cfg.PodNet = cfg.PodNet.Masked()
	ctx, cancel := context.WithCancel(ctx)
	r := &Runner{
		cfg: cfg, ctx: ctx, cancel: cancel,
		http:     &http.Client{Timeout: 5 * time.Second},
		pods:     map[types.UID]*pod{},
		ips:      map[netip.Addr]bool{},
		lastIP:   cfg.PodNet.Addr(),
		traffic:  map[string]*traffic{},
		services: map[string]*service{},
	}
	if err := r.writeHosts(); err != nil {
		cancel()
		return nil, err
	}
	if err := r.registerNode(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("register node: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", cfg.Node).String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.observe(obj) },
		UpdateFunc: func(_, obj any) { r.observe(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				r.gone(p.UID)
			}
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	synced, err := r.watchServices(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	unscheduled, err := r.schedule(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, synced, unscheduled) {
		cancel()
		return nil, errors.New("pod and service informers did not sync")
	}
	return r, nil
}

// Stop stops every pod's process. Pods stay in the API.
func (r *Runner) Stop() {
	r.cancel()
	r.closeServices()
	r.wg.Wait()
}

func (r *Runner) registerNode(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.cfg.Node, Labels: map[string]string{"kubernetes.io/hostname": r.cfg.Node}}}
	created, err := r.cfg.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = r.cfg.Client.CoreV1().Nodes().Get(ctx, r.cfg.Node, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("500"),
	}
	created.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "barometer e2e pod runner", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: r.cfg.Node}},
	}
	_, err = r.cfg.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// observe starts a pod it has not seen, and stops one being deleted.
func (r *Runner) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	known := r.pods[p.UID]
	r.mu.Unlock()
	switch {
	case p.DeletionTimestamp != nil && known != nil:
		r.startTermination(known, p)
	case p.DeletionTimestamp != nil:
		// Never started (or started by an earlier runner): just confirm.
		r.confirmDelete(p.Namespace, p.Name, p.UID)
	case known == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
		r.admit(p)
	}
}

// startTermination starts a graceful deletion's end of a running pod: the
// process serves for its preStop sleep (at most the deletion's grace
// period), then stops.
func (r *Runner) startTermination(p *pod, k *corev1.Pod) {
	hold := preStopSleep(k)
	if g := k.DeletionGracePeriodSeconds; g != nil {
		hold = min(hold, time.Duration(*g)*time.Second)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-p.terminate:
		return // seen already: the hold started then
	default:
	}
	p.hold = hold
	p.grace = 30 * time.Second
	if g := k.DeletionGracePeriodSeconds; g != nil {
		p.grace = time.Duration(*g) * time.Second
	}
	close(p.terminate)
}

// preStopSleep is the first container's preStop sleep, the one preStop
// action the runner plays; zero without one.
func preStopSleep(k *corev1.Pod) time.Duration {
	if len(k.Spec.Containers) == 0 {
		return 0
	}
	if l := k.Spec.Containers[0].Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		return time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	return 0
}

func (r *Runner) gone(uid types.UID) {
	r.mu.Lock()
	p := r.pods[uid]
	r.mu.Unlock()
	if p != nil {
		p.cancel()
	}
}

func (r *Runner) admit(k *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil || r.pods[k.UID] != nil {
		return
	}
	ip, ok := r.nextIP()
	if !ok {
		r.cfg.Logf("podrunner: no free address in %v for %s/%s", r.cfg.PodNet, k.Namespace, k.Name)
		return
	}
	r.ips[ip] = true
	ctx, cancel := context.WithCancel(r.ctx)
	p := &pod{
		uid: k.UID, namespace: k.Namespace, name: k.Name, app: k.Labels[AppLabel],
		labels: maps.Clone(k.Labels), ports: containerPorts(k), program: r.program(k),
		ip: ip.String(), addr: net.JoinHostPort(ip.String(), strconv.Itoa(r.cfg.Port)),
		terminate: make(chan struct{}), cancel: cancel, done: make(chan struct{}),
	}
	r.pods[k.UID] = p
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(p.done)
		r.run(ctx, p, k)
	}()
}

// nextIP is the next free pod address after the last one given, so an
// address is reused as late as possible: a scaler's view of a Service (its
// slices, its hosts file) may still name a pod that just went. r.mu is held.
func (r *Runner) nextIP() (netip.Addr, bool) {
	first := r.cfg.PodNet.Addr().Next()
	a := r.lastIP
	for range 1 << (32 - r.cfg.PodNet.Bits()) {
		a = a.Next()
		if !r.cfg.PodNet.Contains(a.Next()) { // the last address: wrap
			a = first
		}
		if !r.ips[a] {
			r.lastIP = a
			return a, true
		}
	}
	return netip.Addr{}, false
}

// run is one pod's life: start, report ready, wait for deletion, stop.
func (r *Runner) run(ctx context.Context, p *pod, k *corev1.Pod) {
	defer func() {
		r.mu.Lock()
		delete(r.pods, p.uid)
		delete(r.ips, netip.MustParseAddr(p.ip))
		r.mu.Unlock()
	}()
	started := time.Now()
	spec, err := r.spec(ctx, p, k)
	if err != nil {
		r.cfg.Logf("podrunner: %s/%s: %v", p.namespace, p.name, err)
		<-ctx.Done()
		return
	}
	pr, err := proc.Start(spec)
	if err != nil {
		r.cfg.Logf("podrunner: %s/%s: %v", p.namespace, p.name, err)
		return
	}
	defer pr.Stop(5 * time.Second)
	if p.program != "" {
		// A kubelet reports a container Running on its address as soon as
		// it starts, Ready only once its readiness probe passes: the
		// EndpointSlice controller lists it as starting meanwhile.
		if err := r.reportReady(ctx, k, p, started, false); err != nil && ctx.Err() == nil {
			r.cfg.Logf("podrunner: %s/%s: status: %v", p.namespace, p.name, err)
		}
	}
	if err := r.waitServing(ctx, p, k, pr); err != nil {
		if ctx.Err() == nil {
			r.cfg.Logf("podrunner: %s/%s never served: %v\n%s", p.namespace, p.name, err, pr.Tail(1000))
		}
	} else if err := r.reportReady(ctx, k, p, started, true); err != nil {
		if ctx.Err() == nil {
			r.cfg.Logf("podrunner: %s/%s: status: %v", p.namespace, p.name, err)
		}
	} else {
		r.mu.Lock()
		p.ready, p.readyAt = true, time.Now()
		r.mu.Unlock()
		r.changed(p.namespace, p.app)
		r.cfg.Logf("podrunner: %s/%s ready at %s in %.1fs", p.namespace, p.name, p.ip, time.Since(started).Seconds())
		if p.program != "" {
			go r.probe(ctx, p, k, started)
		}
	}
	select {
	case <-ctx.Done():
	case <-p.terminate:
		// A graceful deletion: the process goes on serving through the
		// preStop hold, Ready as it is, so the EndpointSlice controller
		// keeps it as serving and terminating.
		r.mu.Lock()
		p.terminating = true
		hold := p.hold
		if !p.ready {
			hold = 0 // never served: nothing to drain
		}
		r.mu.Unlock()
		r.changed(p.namespace, p.app)
		r.cfg.Logf("podrunner: %s/%s terminating: serving for %s more", p.namespace, p.name, hold)
		select {
		case <-ctx.Done():
		case <-pr.Done():
		case <-time.After(hold):
		}
	case <-pr.Done():
		r.cfg.Logf("podrunner: %s/%s process exited:\n%s", p.namespace, p.name, pr.Tail(1000))
		<-ctx.Done()
	}
	r.mu.Lock()
	p.ready = false
	grace := p.grace
	r.mu.Unlock()
	r.changed(p.namespace, p.app)
	if p.program == "" || grace == 0 {
		grace = 5 * time.Second
	}
	// A container gets SIGTERM and the deletion's grace period to drain,
	// as a kubelet gives it; the demo workload stops at once.
	pr.Stop(grace)
	if r.ctx.Err() == nil {
		r.confirmDelete(p.namespace, p.name, p.uid)
	}
}

// spec is how a pod's process starts: a container's program
// (container.go), or the demo workload on the pod's address with the
// container's args after the runner's own.
func (r *Runner) spec(ctx context.Context, p *pod, k *corev1.Pod) (proc.Spec, error) {
	if p.program != "" {
		return r.containerSpec(ctx, p, k)
	}
	env, err := containerEnv(k, p.ip)
	if err != nil {
		return proc.Spec{}, err
	}
	return proc.Spec{
		Name: "pod_" + p.namespace + "_" + p.name, Path: r.cfg.DemoBin,
		Args:   append([]string{"-listen", p.addr, "-replicas", "1"}, containerArgs(k)...),
		Env:    env,
		LogDir: filepath.Join(r.cfg.LogDir, "pods"),
	}, nil
}

// containerArgs are the first container's args: the runner runs every pod's
// container as the demo workload, with the args the pod spec gives it.
func containerArgs(k *corev1.Pod) []string {
	if len(k.Spec.Containers) == 0 {
		return nil
	}
	return k.Spec.Containers[0].Args
}

// waitServing waits for a demo pod's /state, or for a container's
// readiness probe to pass.
func (r *Runner) waitServing(ctx context.Context, p *pod, k *corev1.Pod, pr *proc.Proc) error {
	if p.program != "" {
		return r.waitProbe(ctx, p, k, pr)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if done, err := pr.Exited(); done {
			return fmt.Errorf("exited: %v", err)
		}
		err := r.request(ctx, http.MethodGet, "http://"+p.addr+"/state")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// reportReady reports the pod Running on its address, Ready or not as its
// readiness says.
func (r *Runner) reportReady(ctx context.Context, k *corev1.Pod, p *pod, started time.Time, ready bool) error {
	pods := r.cfg.Client.CoreV1().Pods(p.namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != p.uid {
			return fmt.Errorf("pod was replaced")
		}
		now := metav1.Now()
		start := metav1.NewTime(started)
		if cur.DeletionTimestamp != nil && ready {
			// Deleted while starting: it never becomes ready.
			return fmt.Errorf("pod is being deleted")
		}
		cur.Status.Phase = corev1.PodRunning
		cur.Status.HostIP = "127.0.0.1"
		cur.Status.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
		cur.Status.PodIP = p.ip
		cur.Status.PodIPs = []corev1.PodIP{{IP: p.ip}}
		cur.Status.StartTime = &start
		cur.Status.Conditions = nil
		for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
			status := corev1.ConditionTrue
			if !ready && (t == corev1.ContainersReady || t == corev1.PodReady) {
				status = corev1.ConditionFalse
			}
			cur.Status.Conditions = append(cur.Status.Conditions, corev1.PodCondition{Type: t, Status: status, LastTransitionTime: now})
		}
		cur.Status.ContainerStatuses = nil
		isStarted := true
		for _, c := range cur.Spec.Containers {
			cur.Status.ContainerStatuses = append(cur.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: "e2e://" + c.Image, ContainerID: "e2e://" + string(p.uid),
				Ready: ready, Started: &isStarted,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}},
			})
		}
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

func (r *Runner) confirmDelete(namespace, name string, uid types.UID) {
	zero := int64(0)
	err := r.cfg.Client.CoreV1().Pods(namespace).Delete(context.Background(), name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.cfg.Logf("podrunner: confirm deletion of %s/%s: %v", namespace, name, err)
	}
}

func key(namespace, app string) string { return namespace + "/" + app }

// ServiceName is the name the hosts file gives a workload's ready pods.
func ServiceName(namespace, app string) string { return app + "." + namespace + ".svc" }

// SetLoad sets a workload's total request rate, spread over its ready
// pods; it ends a SetPodLoads.
func (r *Runner) SetLoad(namespace, app string, rps float64) error {
	r.mu.Lock()
	t := r.trafficOf(namespace, app)
	t.rps, t.perPod = rps, nil
	r.mu.Unlock()
	return r.apply(namespace, app)
}

// SetPodLoads sets the request rate of each named pod of a workload, and
// none on its other pods (nor on a pod that starts later), until the next
// SetLoad. A pod named but not running gets its rate when it is ready.
func (r *Runner) SetPodLoads(namespace, app string, loads map[string]float64) error {
	r.mu.Lock()
	t := r.trafficOf(namespace, app)
	t.perPod = maps.Clone(loads)
	if t.perPod == nil {
		t.perPod = map[string]float64{}
	}
	r.mu.Unlock()
	return r.apply(namespace, app)
}

// SetSplits sets the splits in flight on every ready pod of a workload.
func (r *Runner) SetSplits(namespace, app string, n float64) error {
	r.mu.Lock()
	t := r.trafficOf(namespace, app)
	t.splits = n
	r.mu.Unlock()
	return r.apply(namespace, app)
}

// Load is a workload's total request rate: the SetLoad total, or after
// SetPodLoads the sum of the rates of its pods that are ready and not
// terminating.
func (r *Runner) Load(namespace, app string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.trafficOf(namespace, app)
	if t.perPod == nil {
		return t.rps
	}
	sum := 0.0
	for _, p := range r.pods {
		if p.serving() && p.namespace == namespace && p.app == app {
			sum += t.perPod[p.name]
		}
	}
	return sum
}

// Ready lists the addresses of a workload's ready pods (terminating ones
// left out).
func (r *Runner) Ready(namespace, app string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.pods {
		if p.serving() && p.namespace == namespace && p.app == app {
			out = append(out, p.addr)
		}
	}
	slices.Sort(out)
	return out
}

// Pod is what the runner knows of one pod it runs.
type Pod struct {
	Name string
	IP   string
	// Addr is the workload's host:port.
	Addr string
	// Ready: the process served and the Pod was reported Ready.
	Ready bool
	// Terminating: a graceful deletion is under way; the process still
	// serves while Ready is also true.
	Terminating bool
}

// Pods lists the pods of a workload the runner runs, by name.
func (r *Runner) Pods(namespace, app string) []Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Pod
	for _, p := range r.pods {
		if p.namespace == namespace && p.app == app {
			out = append(out, Pod{Name: p.name, IP: p.ip, Addr: p.addr, Ready: p.ready, Terminating: p.terminating})
		}
	}
	slices.SortFunc(out, func(a, b Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// serving is ready and not terminating: a Service's ready endpoint. r.mu
// is held.
func (p *pod) serving() bool { return p.ready && !p.terminating }

func (r *Runner) trafficOf(namespace, app string) *traffic {
	t := r.traffic[key(namespace, app)]
	if t == nil {
		t = &traffic{}
		r.traffic[key(namespace, app)] = t
	}
	return t
}

// changed follows a change of a workload's ready pods: the hosts file and
// the spread of its load.
func (r *Runner) changed(namespace, app string) {
	if err := r.writeHosts(); err != nil {
		r.cfg.Logf("podrunner: hosts file: %v", err)
	}
	if err := r.apply(namespace, app); err != nil && r.ctx.Err() == nil {
		r.cfg.Logf("podrunner: %v", err)
	}
}

// apply sends every ready, not terminating pod of a workload its load (its
// share of the total, or its own rate) and the splits in flight.
func (r *Runner) apply(namespace, app string) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.mu.Lock()
	t := *r.trafficOf(namespace, app)
	perPod := maps.Clone(t.perPod)
	var ready []*pod
	for _, p := range r.pods {
		if p.serving() && p.program == "" && p.namespace == namespace && p.app == app {
			ready = append(ready, p)
		}
	}
	r.mu.Unlock()
	if len(ready) == 0 {
		return nil
	}
	share := t.rps / float64(len(ready))
	var errs []error
	for _, p := range ready {
		rps := share
		if t.perPod != nil {
			rps = perPod[p.name]
		}
		for _, set := range []struct {
			path, param string
			v           float64
		}{{"/load", "rps", rps}, {"/splits", "n", t.splits}} {
			if err := r.post(p.addr, set.path, set.param, set.v); err != nil {
				errs = append(errs, fmt.Errorf("%s/%s %s: %w", p.namespace, p.name, set.path, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (r *Runner) post(addr, path, param string, v float64) error {
	u := "http://" + addr + path + "?" + url.Values{param: {strconv.FormatFloat(v, 'f', -1, 64)}}.Encode()
	return r.request(r.ctx, http.MethodPost, u)
}

// request sends a request without a body; a status other than 2xx or 3xx
// is an error.
func (r *Runner) request(ctx context.Context, method, u string) error {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return errors.New(resp.Status)
	}
	return nil
}
