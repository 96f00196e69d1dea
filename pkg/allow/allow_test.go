package allow

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func mustParse(t *testing.T, spec string) *List {
	t.Helper()
	l, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestParseErrorsNameTheSetting(t *testing.T) {
	for _, spec := range []string{"", " , ", "not a host", "!*.svc", "10.0.0.0/33", "*.", "a..b", "*.-x_y z"} {
		_, err := Parse(spec)
		if err == nil {
			t.Errorf("Parse(%q) accepted", spec)
			continue
		}
		if !strings.Contains(err.Error(), EnvVar) {
			t.Errorf("Parse(%q) error %q does not name %s", spec, err, EnvVar)
		}
	}
}

func TestSetValueReplacesDefault(t *testing.T) {
	l, err := Parse(" 127.0.0.0/8 , demo.example ")
	if err != nil || l.String() != "127.0.0.0/8,demo.example" {
		t.Fatalf("set: %v, %v", l, err)
	}
	if err := l.Host("web.ns.svc"); err == nil {
		t.Fatal("a set value kept the default patterns")
	}
}

func TestHost(t *testing.T) {
	def := Default()
	custom := mustParse(t, "*.svc,demo.example,10.0.0.0/8,!10.1.0.0/16,127.0.0.1,fd00::/8")
	for _, tc := range []struct {
		l    *List
		host string
		ok   bool
	}{
		{def, "web.ns.svc", true},
		{def, "WEB.ns.SVC.", true},
		{def, "web.ns.svc.cluster.local", true},
		{def, "svc", false},
		{def, ".svc", false},
		{def, "web.ns.svc.evil.example", false},
		{def, "localhost", false},
		{def, "127.0.0.1", false},
		{def, "10.0.0.1", false},
		{def, "::1", false},
		{def, "", false},
		{custom, "demo.example", true},
		{custom, "x.demo.example", false},
		{custom, "10.2.3.4", true},
		{custom, "10.1.3.4", false}, // denied wins
		{custom, "127.0.0.1", true},
		{custom, "127.0.0.2", false},
		{custom, "[fd00::5]", true},
		{custom, "::ffff:10.2.3.4", true}, // mapped addresses are their IPv4 selves
		{custom, "fe80::1%eth0", false},
		{mustParse(t, "*"), "anything.example", true},
	} {
		err := tc.l.Host(tc.host)
		if (err == nil) != tc.ok {
			t.Errorf("%s: Host(%q) = %v, want ok=%v", tc.l, tc.host, err, tc.ok)
		}
		var re *RefusedError
		if err != nil && (!errors.As(err, &re) || !strings.Contains(err.Error(), EnvVar) || !strings.Contains(err.Error(), tc.host)) {
			t.Errorf("Host(%q) error %q does not name the address and %s", tc.host, err, EnvVar)
		}
	}
}

// TestNameResolvingIntoRefusedRange is the ExternalName attack: a name the
// patterns allow resolves to loopback or the metadata service.
func TestNameResolvingIntoRefusedRange(t *testing.T) {
	def := Default()
	name := "evil.ns.svc"
	if err := def.Host(name); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"127.0.0.1", "169.254.169.254", "0.0.0.0", "0.1.2.3", "::1", "fe80::1", "fe80::1%eth0", "fd00:ec2::254", "100.100.100.200", "224.0.0.1", "255.255.255.255", "::ffff:127.0.0.1"} {
		err := def.Addr(name, netip.MustParseAddr(a))
		if err == nil {
			t.Errorf("%s -> %s allowed", name, a)
			continue
		}
		if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), EnvVar) {
			t.Errorf("error %q does not name %s and %s", err, name, EnvVar)
		}
	}
	// Ordinary pod and Service addresses, IPv4 and IPv6, pass.
	for _, a := range []string{"10.244.1.7", "172.20.0.3", "2001:db8::7", "fd12::7"} {
		if err := def.Addr(name, netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s -> %s refused: %v", name, a, err)
		}
	}
	// A CIDR allows a refused range explicitly; a denied CIDR refuses a
	// range the default would pass.
	l := mustParse(t, "*.svc,127.0.0.0/8,!10.96.0.0/12")
	if err := l.Addr(name, netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("explicit loopback refused: %v", err)
	}
	if err := l.Addr(name, netip.MustParseAddr("169.254.169.254")); err == nil {
		t.Error("metadata allowed by an unrelated CIDR")
	}
	if err := l.Addr(name, netip.MustParseAddr("10.96.0.1")); err == nil {
		t.Error("denied CIDR allowed")
	}
}

func TestControl(t *testing.T) {
	l := mustParse(t, "*.svc,127.0.0.0/8")
	for addr, ok := range map[string]bool{
		"127.0.0.1:80":          true,
		"10.0.0.1:80":           true,
		"169.254.169.254:80":    false,
		"[::1]:80":              false,
		"[fe80::1%25eth0]:8080": false,
		"not-an-ip:80":          false,
	} {
		if err := l.Control("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("Control(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}
