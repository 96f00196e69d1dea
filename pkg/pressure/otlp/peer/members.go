package peer

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
)

// members is who the peers are now.
type members interface {
	// read returns the peers' addresses (host:port).
	read(ctx context.Context) ([]string, error)
	// static says the answer never changes.
	static() bool
	close()
}

// staticMembers are peers named in the configuration.
type staticMembers []string

func (s staticMembers) read(context.Context) ([]string, error) { return s, nil }
func (staticMembers) static() bool                             { return true }
func (staticMembers) close()                                   {}

// kubeMembers are the pods of a Service, from its EndpointSlices: the
// ready ones and those starting (a replica that is not ready yet takes
// pushes too, so that it is whole once it is), never a terminating one,
// and never this replica: its own pod (by name), or an address of this
// machine on this replica's own peer port.
type kubeMembers struct {
	disc               discovery.Discovery
	namespace, service string
	port               string
	self               string
	selfAddrs          []netip.AddrPort

	ns      discovery.Namespace
	release func()
}

// readWait bounds a read of the EndpointSlices, which waits for the
// informer's first listing.
const readWait = 10 * time.Second

// parseKubeMembers reads "<service>.<namespace>:<port>".
func parseKubeMembers(rest string, disc discovery.Discovery, kubeErr error, self string) (*kubeMembers, error) {
	hostport, port, ok := strings.Cut(rest, ":")
	service, namespace, dotted := strings.Cut(hostport, ".")
	switch {
	case !ok || port == "" || !dotted || service == "" || namespace == "" || strings.ContainsAny(rest, "/?#"):
		return nil, fmt.Errorf("k8s://%s: allowed k8s://<service>.<namespace>:<port>, the port a number or a port name", rest)
	case disc == nil:
		return nil, fmt.Errorf("k8s://%s: the scaler cannot reach Kubernetes: %v", rest, kubeErr)
	}
	return &kubeMembers{disc: disc, namespace: namespace, service: service, port: port, self: self}, nil
}

func (k *kubeMembers) read(ctx context.Context) ([]string, error) {
	if k.ns == nil {
		k.ns, k.release = k.disc.Acquire(k.namespace)
	}
	ctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	eps, err := k.ns.Endpoints(ctx, k.service, k.port)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ep := range eps {
		a := netip.AddrPortFrom(ep.Addr, ep.Port)
		if ep.State == discovery.Terminating || ep.Pod != "" && ep.Pod == k.self || slices.Contains(k.selfAddrs, a) {
			continue
		}
		out = append(out, a.String())
	}
	return out, nil
}

func (*kubeMembers) static() bool { return false }

// listening tells the members this replica's own peer port: an endpoint
// on it at one of this machine's addresses is this replica.
func (k *kubeMembers) listening(port uint16) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			k.selfAddrs = append(k.selfAddrs, netip.AddrPortFrom(p.Addr().Unmap(), port))
		}
	}
}

func (k *kubeMembers) close() {
	if k.release != nil {
		k.release()
	}
}
