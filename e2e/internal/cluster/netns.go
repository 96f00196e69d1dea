package cluster

import (
	"fmt"
	"os/exec"
	"strings"
)

// NetNS is the suite's network namespace: a veth pair whose host end and
// namespace end share a private /30. Traffic goes only between this machine
// and the namespace; nothing is routed anywhere else.
//
// It also carries the pod network: PodNet is a "local" route on the host
// end, so every address in it is this machine's own (as 127.0.0.0/8 is on
// lo) and the pod runner binds each pod's process to one without adding
// addresses. Pods need addresses that are not loopback, because
// kube-apiserver refuses loopback (and link-local) addresses in
// EndpointSlices. The route goes with the veth pair.
//
// ServiceNet, the apiserver's Service CIDR, is local the same way: the pod
// runner listens on a ClusterIP Service's address and proxies it to the
// Service's pods, the suite's kube-proxy.
type NetNS struct {
	Name   string // the namespace
	HostIf string // the host end of the veth pair
	NSIf   string // the namespace end
	HostIP string // address of the host end
	NSIP   string // address of the namespace end
	Prefix int    // prefix length of both
	PodNet string // the pod network, a CIDR local to this machine
	// ServiceNet is the Services' ClusterIP range, local to this machine.
	ServiceNet string
}

// DefaultNetNS is the namespace the suite creates.
func DefaultNetNS() NetNS {
	return NetNS{Name: "barometer-e2e", HostIf: "brme2e0", NSIf: "brme2e1", HostIP: "10.213.0.1", NSIP: "10.213.0.2", Prefix: 30,
		PodNet: "10.214.0.0/24", ServiceNet: "10.215.0.0/24"}
}

// Up creates the namespace, removing a stale one of the same name first
// (left by a run that was killed before its cleanup).
func (n NetNS) Up() error {
	n.Down()
	steps := [][]string{
		{"netns", "add", n.Name},
		{"link", "add", n.HostIf, "type", "veth", "peer", "name", n.NSIf},
		{"link", "set", n.NSIf, "netns", n.Name},
		{"addr", "add", fmt.Sprintf("%s/%d", n.HostIP, n.Prefix), "dev", n.HostIf},
		{"link", "set", n.HostIf, "up"},
		{"-n", n.Name, "addr", "add", fmt.Sprintf("%s/%d", n.NSIP, n.Prefix), "dev", n.NSIf},
		{"-n", n.Name, "link", "set", n.NSIf, "up"},
		{"-n", n.Name, "link", "set", "lo", "up"},
	}
	for _, local := range []string{n.PodNet, n.ServiceNet} {
		if local != "" {
			steps = append(steps, []string{"route", "add", "local", local, "dev", n.HostIf})
		}
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			n.Down()
			return err
		}
	}
	return nil
}

// Down deletes the namespace and the veth pair; it is safe to call when
// they do not exist.
func (n NetNS) Down() {
	_ = ip("netns", "delete", n.Name)
	// Deleting the namespace deletes its veth end and so the pair; the host
	// end is removed explicitly in case the namespace was already gone.
	_ = ip("link", "delete", n.HostIf)
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
