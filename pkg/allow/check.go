package allow

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// RefusedError is an address the list refuses. Its message names the
// address and the setting, so an operator knows what to change.
type RefusedError struct {
	// Address is the refused host name or IP address.
	Address string
	// Why says which rule refused it.
	Why  string
	spec string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("address %q refused by %s=%q: %s", e.Address, EnvVar, e.spec, e.Why)
}

// neverReplicas are the ranges a vetted name may not resolve into unless a
// CIDR allows them: the scaler's own loopback, link-local (169.254.169.254 is
// the metadata service of most clouds), the metadata addresses outside
// link-local (AWS over IPv6, Alibaba), "this network" (0.0.0.0 dials the
// local host on Linux), multicast and broadcast.
var neverReplicas = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("100.100.100.200/32"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("::/128"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
	netip.MustParsePrefix("ff00::/8"),
}

// Host vets an address as metadata names it (a URL's host, without port):
// a name must match a host pattern; an IP literal must be inside an allowed
// CIDR and outside every denied one. A name that passes here must still pass
// Addr for every address it resolves to.
func (l *List) Host(host string) error { return l.HostIn("", host) }

// HostIn is Host for an address named by a ScaledObject of namespace: a
// pattern's Namespace placeholder stands for that namespace ("" for any).
func (l *List) HostIn(namespace, host string) error {
	h := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if h == "" {
		return l.refuse(host, "empty host")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		// A zone would make every prefix test false; the zone is not
		// part of what is reached.
		a = a.Unmap().WithZone("")
		switch {
		case in(l.denied, a):
			return l.refuse(host, "inside a denied CIDR")
		case in(l.allowed, a):
			return nil
		}
		return l.refuse(host, "an IP address must be inside an allowed CIDR")
	}
	name := strings.ToLower(h)
	if !validName(name) {
		return l.refuse(host, "not a valid host name")
	}
	for _, p := range l.patterns {
		if matches(p, name, namespace) {
			return nil
		}
	}
	return l.refuse(host, "the name matches no host pattern")
}

// Addr vets an address that a vetted host resolved to, or is being dialled
// at. host is only for the message.
func (l *List) Addr(host string, a netip.Addr) error {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid():
		return l.refuse(host, "no valid address")
	case in(l.denied, a):
		return l.refuse(named(host, a), "resolves inside a denied CIDR")
	case in(l.allowed, a):
		return nil
	case in(neverReplicas, a):
		return l.refuse(named(host, a), "resolves into loopback, link-local, metadata, multicast or unspecified space, which only a CIDR entry can allow")
	}
	return nil
}

// Control is a net.Dialer Control function that applies Addr to every
// connection about to be made. Install it on the dialer of any HTTP client
// that reaches metadata-defined addresses: it also catches a static name
// resolved by the system resolver and a name whose records change between
// the check and the dial. The client must not follow redirects or use a
// proxy, or the dialled address is not the one that was vetted by Host.
func (l *List) Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return l.refuse(address, "dialled address is not an IP address")
	}
	return l.Addr(address, a)
}

func (l *List) refuse(addr, why string) error {
	return &RefusedError{Address: addr, Why: why, spec: l.spec}
}

func named(host string, a netip.Addr) string {
	if host == "" || host == a.String() {
		return a.String()
	}
	return host + " -> " + a.String()
}

func in(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// matches reports whether name matches pattern p (as stored by
// parsePattern) for a ScaledObject of namespace: label by label from the
// right, the Namespace placeholder standing for namespace, or for any one
// label when namespace is "".
func matches(p, name, namespace string) bool {
	if !strings.Contains(p, Namespace) {
		wild := strings.HasPrefix(p, ".")
		return p == "" || !wild && p == name || wild && strings.HasSuffix(name, p)
	}
	want, wild := strings.CutPrefix(p, ".")
	pl, nl := strings.Split(want, "."), strings.Split(name, ".")
	if wild && len(nl) <= len(pl) || !wild && len(nl) != len(pl) {
		return false
	}
	off := len(nl) - len(pl)
	for j, label := range pl {
		got := nl[off+j]
		switch {
		case label == Namespace && (namespace == "" || got == namespace):
		case label != got:
			return false
		}
	}
	return true
}
