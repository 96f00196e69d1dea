package scrape

import (
	"context"
	"net"
	"strconv"
	"sync"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/target"
)

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
func (k *kubeSpace) expand(ctx context.Context, t target.Target, guard *allow.List) expansion {
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
