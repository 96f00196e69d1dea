// Package allow is the guard that keeps a ScaledObject author from turning
// the scaler into a request forwarder: every address named in trigger
// metadata (scrape targets, DNS names, Prometheus servers) is reached only
// when it matches BAROMETER_ALLOWED_TARGETS.
//
// The setting is a comma-separated list of entries:
//
//   - a host pattern: "*.svc" (any name ending in ".svc"), "demo.example"
//     (exactly that name), or "*" (any name);
//   - a CIDR or a single address: "10.0.0.0/8", "127.0.0.0/8", "fd00::/8",
//     "192.0.2.7";
//   - a denied CIDR or address, prefixed with "!": "!10.96.0.0/12".
//
// Unset or empty, it is DefaultSpec: cluster-local Service names and nothing
// else. A set value replaces the default; it does not add to it.
//
// The rule has two steps, because a name is only as safe as what it resolves
// to (an ExternalName Service can point "evil.ns.svc" anywhere):
//
//  1. Where metadata names the address (Host): a name must match a pattern;
//     an IP literal must be inside an allowed CIDR and not denied.
//  2. Where a vetted name resolves or is dialled (Addr, Control): the
//     address is refused when inside a denied CIDR; allowed when inside an
//     allowed CIDR; otherwise allowed unless it lies in a range that is
//     never a workload replica: loopback, link-local (which holds the cloud
//     metadata service), the known cloud metadata addresses, "this network"
//     0.0.0.0/8, multicast and broadcast. Those are reached only when a CIDR
//     allows them explicitly, which is how "loopback must be allowed
//     explicitly" reads.
//
// Ports are not restricted. Denied CIDRs win over allowed ones, so an
// operator can carve a hole ("10.0.0.0/8,!10.0.0.0/24").
package allow

import (
	"fmt"
	"net/netip"
	"strings"
)

// EnvVar is the setting the list is read from.
const EnvVar = "BAROMETER_ALLOWED_TARGETS"

// DefaultSpec is the list in force when EnvVar is unset or empty.
const DefaultSpec = "*." + Namespace + ".svc,*." + Namespace + ".svc.cluster.local"

// Namespace stands, in a host pattern, for the namespace of the
// ScaledObject whose metadata names the address: "*.{namespace}.svc"
// admits the Services of a ScaledObject's own namespace and no other's.
// For the scaler's own default target, which no namespace owns, it
// stands for any namespace.
const Namespace = "{namespace}"

// List is a parsed allow-list. It is immutable and safe for concurrent use.
type List struct {
	spec     string
	patterns []string // lower case; "*.x" is stored as ".x", "*" as ""; may hold Namespace
	allowed  []netip.Prefix
	denied   []netip.Prefix
}

// Default returns the list of DefaultSpec.
func Default() *List {
	l, err := Parse(DefaultSpec)
	if err != nil {
		panic(err) // DefaultSpec is a constant that parses
	}
	return l
}

// FromSetting is the list EnvVar's value sets: DefaultSpec when it is
// empty or blank (set but empty reads as unset), Parse otherwise.
func FromSetting(spec string) (*List, error) {
	if strings.TrimSpace(spec) == "" {
		return Default(), nil
	}
	return Parse(spec)
}

// Parse reads a comma-separated list of entries (see the package comment).
// Errors name EnvVar and the entry.
func Parse(spec string) (*List, error) {
	l := &List{}
	var kept []string
	for _, raw := range strings.Split(spec, ",") {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		kept = append(kept, e)
		if err := l.add(e); err != nil {
			return nil, fmt.Errorf("%s: entry %q: %w", EnvVar, e, err)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%s: no entries (unset it for the default %q)", EnvVar, DefaultSpec)
	}
	l.spec = strings.Join(kept, ",")
	return l, nil
}

func (l *List) add(e string) error {
	if rest, ok := strings.CutPrefix(e, "!"); ok {
		p, err := parsePrefix(rest)
		if err != nil {
			return fmt.Errorf("a denied entry must be a CIDR or an IP address: %w", err)
		}
		l.denied = append(l.denied, p)
		return nil
	}
	if p, err := parsePrefix(e); err == nil {
		l.allowed = append(l.allowed, p)
		return nil
	}
	pat, err := parsePattern(e)
	if err != nil {
		return err
	}
	l.patterns = append(l.patterns, pat)
	return nil
}

// parsePrefix reads a CIDR or a bare address (a one-address prefix).
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		// Unmap so that ::ffff:10.0.0.0/104 and 10.0.0.0/8 mean the same.
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// parsePattern reads "*", "*.suffix" or an exact host name.
func parsePattern(s string) (string, error) {
	if s == "*" {
		return "", nil
	}
	s = strings.TrimSuffix(strings.ToLower(s), ".")
	name, wild := strings.CutPrefix(s, "*.")
	if !validName(strings.ReplaceAll(name, Namespace, "ns")) || strings.Count(name, Namespace) > 1 {
		return "", fmt.Errorf("not a CIDR, an IP address or a host pattern (\"*.svc\", \"demo.example\", \"*\")")
	}
	if wild {
		return "." + name, nil
	}
	return name, nil
}

// validName accepts DNS names made of letters, digits, '-' and '_' labels.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// String returns the list as configured (entries trimmed).
func (l *List) String() string { return l.spec }
