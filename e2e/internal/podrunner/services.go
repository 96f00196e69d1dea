package podrunner

import (
	"context"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// service is a Service with a selector, as the runner plays it: with no
// cluster DNS, its name is a line of the hosts file, naming its ready pods
// when it is headless, its ClusterIP otherwise; with no kube-proxy, the
// runner listens on the ClusterIP's ports and hands each connection to
// one of the ready pods, at random, as kube-proxy's userspace mode did.
type service struct {
	namespace, name string
	selector        labels.Selector
	clusterIP       string // "" when headless, or outside Config.ServiceNet
	ports           []corev1.ServicePort
	listeners       []net.Listener
}

// watchServices follows every Service with a selector.
func (r *Runner) watchServices(ctx context.Context) (cache.InformerSynced, error) {
	factory := informers.NewSharedInformerFactory(r.cfg.Client, 0)
	inf := factory.Core().V1().Services().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.setService(obj) },
		UpdateFunc: func(_, obj any) { r.setService(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if s, ok := obj.(*corev1.Service); ok {
				r.dropService(s.Namespace + "/" + s.Name)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return inf.HasSynced, nil
}

func (r *Runner) setService(obj any) {
	k, ok := obj.(*corev1.Service)
	if !ok || len(k.Spec.Selector) == 0 {
		return
	}
	s := &service{namespace: k.Namespace, name: k.Name, selector: labels.SelectorFromSet(k.Spec.Selector), ports: k.Spec.Ports}
	if ip, err := netip.ParseAddr(k.Spec.ClusterIP); err == nil && r.cfg.ServiceNet.IsValid() && r.cfg.ServiceNet.Contains(ip) {
		s.clusterIP = ip.String()
	}
	key := s.namespace + "/" + s.name
	r.mu.Lock()
	old := r.services[key]
	if old != nil && old.clusterIP == s.clusterIP && equality.Semantic.DeepEqual(old.ports, s.ports) {
		s.listeners = old.listeners
		old = nil
	}
	r.services[key] = s
	r.mu.Unlock()
	if old != nil {
		old.close()
	}
	if s.clusterIP != "" && s.listeners == nil {
		r.listen(s)
	}
	if err := r.writeHosts(); err != nil {
		r.cfg.Logf("podrunner: hosts file: %v", err)
	}
}

func (r *Runner) dropService(key string) {
	r.mu.Lock()
	s := r.services[key]
	delete(r.services, key)
	r.mu.Unlock()
	if s != nil {
		s.close()
	}
	if err := r.writeHosts(); err != nil {
		r.cfg.Logf("podrunner: hosts file: %v", err)
	}
}

// closeServices stops every proxy listener.
func (r *Runner) closeServices() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.services {
		s.close()
	}
}

func (s *service) close() {
	for _, l := range s.listeners {
		l.Close()
	}
}

// listen opens the Service's TCP ports on its ClusterIP.
func (r *Runner) listen(s *service) {
	var ls []net.Listener
	for _, port := range s.ports {
		if port.Protocol != "" && port.Protocol != corev1.ProtocolTCP {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(s.clusterIP, strconv.Itoa(int(port.Port))))
		if err != nil {
			r.cfg.Logf("podrunner: service %s/%s: %v", s.namespace, s.name, err)
			continue
		}
		ls = append(ls, l)
		go r.accept(l, s.namespace+"/"+s.name, port)
	}
	r.mu.Lock()
	s.listeners = ls
	r.mu.Unlock()
}

func (r *Runner) accept(l net.Listener, key string, port corev1.ServicePort) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go r.proxy(c, key, port)
	}
}

// proxy hands one connection to a ready pod of the Service, chosen at
// random, and closes both ends when either ends: a pod that stops ends its
// clients' connections, and they reconnect to the ClusterIP.
func (r *Runner) proxy(c net.Conn, key string, port corev1.ServicePort) {
	defer c.Close()
	backend, ok := r.backend(key, port)
	if !ok {
		return // no ready pod: refused, as kube-proxy refuses
	}
	b, err := net.DialTimeout("tcp", backend, 5*time.Second)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	select {
	case <-done:
	case <-r.ctx.Done():
	}
}

// backend is a ready, not terminating pod of the Service, at the port the
// Service's targetPort names.
func (r *Runner) backend(key string, port corev1.ServicePort) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.services[key]
	if s == nil {
		return "", false
	}
	var addrs []string
	for _, p := range r.pods {
		if !p.serving() || p.namespace != s.namespace || !s.selector.Matches(labels.Set(p.labels)) {
			continue
		}
		target := port.Port
		switch {
		case port.TargetPort.StrVal != "":
			n, ok := p.ports[port.TargetPort.StrVal]
			if !ok {
				continue
			}
			target = n
		case port.TargetPort.IntVal != 0:
			target = port.TargetPort.IntVal
		}
		addrs = append(addrs, net.JoinHostPort(p.ip, strconv.Itoa(int(target))))
	}
	if len(addrs) == 0 {
		return "", false
	}
	return addrs[rand.IntN(len(addrs))], true
}

// containerPorts are the first container's named ports.
func containerPorts(k *corev1.Pod) map[string]int32 {
	out := map[string]int32{}
	if len(k.Spec.Containers) > 0 {
		for _, p := range k.Spec.Containers[0].Ports {
			if p.Name != "" {
				out[p.Name] = p.ContainerPort
			}
		}
	}
	return out
}

// writeHosts rewrites the hosts file in place: every ready pod of a
// workload as "<app>.<namespace>.svc", and every Service the runner plays
// (its ready pods when headless, its ClusterIP otherwise).
func (r *Runner) writeHosts() error {
	r.mu.Lock()
	seen := map[string]bool{}
	add := func(ip, name string) {
		seen[ip+"\t"+name+" "+name+".cluster.local"] = true
	}
	for _, p := range r.pods {
		if p.serving() && p.app != "" {
			add(p.ip, ServiceName(p.namespace, p.app))
		}
	}
	for _, s := range r.services {
		name := ServiceName(s.namespace, s.name)
		if s.clusterIP != "" {
			add(s.clusterIP, name)
			continue
		}
		for _, p := range r.pods {
			if p.serving() && p.namespace == s.namespace && s.selector.Matches(labels.Set(p.labels)) {
				add(p.ip, name)
			}
		}
	}
	r.mu.Unlock()
	lines := slices.Sorted(maps.Keys(seen))
	content := "# written by the barometer e2e pod runner\n127.0.0.1\tlocalhost\n::1\tlocalhost\n" + strings.Join(lines, "\n") + "\n"
	// One write of the whole file: it is read by another process, and a
	// rename would not reach a bind mount.
	f, err := os.OpenFile(r.cfg.HostsFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(content))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// schedule plays the scheduler for pods that name no node (a chart's
// Deployment does not): it binds each to the runner's node.
func (r *Runner) schedule(ctx context.Context) (cache.InformerSynced, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(r.cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", "").String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	bind := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName != "" || p.DeletionTimestamp != nil ||
			p.Spec.SchedulerName != "" && p.Spec.SchedulerName != corev1.DefaultSchedulerName {
			return
		}
		err := r.cfg.Client.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: r.cfg.Node},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			r.cfg.Logf("podrunner: bind %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: bind, UpdateFunc: func(_, obj any) { bind(obj) }})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return inf.HasSynced, nil
}
