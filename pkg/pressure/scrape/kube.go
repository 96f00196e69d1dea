package scrape

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
)

// KubeScheme marks a target whose replicas are the ready endpoints of a
// Service's EndpointSlices, in the namespace of the ScaledObject that names
// it (docs/kubernetes.md).
const KubeScheme = "k8s"

// KubeService is what a k8s:// target names.
type KubeService struct {
	// Service is the Service's name.
	Service string
	// Port is a port number, or the name of a port of the Service's
	// EndpointSlices.
	Port string
}

// Host is the name the allow-list vets for the Service in namespace, as
// DNS would spell it: a k8s:// target passes where its Service's
// cluster-local name would.
func (k KubeService) Host(namespace string) string {
	return k.Service + "." + namespace + ".svc"
}

// parseKube reads what follows "k8s://": "service:port" and an optional
// path (DefaultPath when none) and query.
func parseKube(rest string) (Target, error) {
	cut := strings.IndexAny(rest, "/?#")
	if cut < 0 {
		cut = len(rest)
	}
	hostport, tail := rest[:cut], rest[cut:]
	svc, port, ok := strings.Cut(hostport, ":")
	switch {
	case !ok || port == "":
		return Target{}, fmt.Errorf("%s://%s: name the port, as %s://service:port/path (a number or the name of an EndpointSlice port)", KubeScheme, hostport, KubeScheme)
	case !validLabel(svc, 63) || svc[0] < 'a' || svc[0] > 'z':
		return Target{}, fmt.Errorf("service %q: a Service name is lower-case letters, digits and '-', starting with a letter, at most 63 bytes", svc)
	case !validPort(port):
		return Target{}, fmt.Errorf("port %q: a number from 1 to 65535, or a port name (lower-case letters, digits and '-', with a letter, at most 15 bytes)", port)
	}
	u, err := url.Parse("http://x" + tail)
	switch {
	case err != nil:
		return Target{}, err
	case u.Fragment != "":
		return Target{}, errors.New("a target URL has no fragment")
	}
	u.Host = svc + ":" + port
	if u.Path == "" {
		u.Path = DefaultPath
	}
	return Target{URL: u, Kube: &KubeService{Service: svc, Port: port}}, nil
}

// validLabel: lower-case letters, digits and '-', not at either end.
func validLabel(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

func validPort(s string) bool {
	if n, err := strconv.ParseUint(s, 10, 16); err == nil {
		return n > 0
	}
	return validLabel(s, 15) && strings.ContainsFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' }) && !strings.Contains(s, "--")
}

// kubeSpace is a source's use of its namespace's watch: acquired on the
// first sample that needs it, released by Close, and acquired again by a
// sample after Close (Observe still works after Close, as for connections).
type kubeSpace struct {
	disc      discovery.Discovery
	namespace string

	mu      sync.Mutex
	ns      discovery.Namespace
	release func()
}

func (k *kubeSpace) get() discovery.Namespace {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ns == nil {
		k.ns, k.release = k.disc.Acquire(k.namespace)
	}
	return k.ns
}

func (k *kubeSpace) close() {
	if k == nil {
		return
	}
	k.mu.Lock()
	release := k.release
	k.ns, k.release = nil, nil
	k.mu.Unlock()
	if release != nil {
		release()
	}
}

// expand turns a k8s:// target into this sample's replicas: one per ready
// endpoint, named by its pod (by its URL when it has none) and vetted by the
// allow-list as a DNS target's addresses are. Starting and terminating
// endpoints are named, not scraped. A Service that does not exist, or whose
// endpoints cannot be read, is one missing replica named by the target, so
// a sample with no other replica fails and says why; a Service with no
// endpoints adds nothing: a workload at zero.
func (k *kubeSpace) expand(ctx context.Context, t Target, guard *allow.List) expansion {
	eps, err := k.get().Endpoints(ctx, t.Kube.Service, t.Kube.Port)
	if err != nil {
		return expansion{missing: []pressure.MissingReplica{{Name: t.String(), Err: err}}}
	}
	host := t.Kube.Host(k.namespace)
	var out expansion
	for _, ep := range eps {
		u := *t.URL
		u.Host = net.JoinHostPort(ep.Addr.String(), strconv.Itoa(int(ep.Port)))
		name := u.String()
		if ep.Pod != "" {
			name = ep.Pod
		}
		switch ep.State {
		case discovery.Starting:
			out.starting = append(out.starting, name)
			continue
		case discovery.Terminating:
			out.terminating = append(out.terminating, name)
			continue
		}
		if guard != nil {
			if err := guard.Addr(host, ep.Addr); err != nil {
				out.missing = append(out.missing, pressure.MissingReplica{Name: name, Err: err})
				continue
			}
		}
		out.jobs = append(out.jobs, job{name: name, url: u.String(), pod: ep.Pod, key: endpoint(&u)})
	}
	return out
}
