// Package target is the language of a scrape source's `targets`: an
// http, https, dns+http or k8s URL, parsed into the Target the scrape
// source expands into replicas at every sample.
package target

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// DNSScheme marks a target whose host is expanded, on every sample, into one
// replica per A/AAAA record (a headless Service).
const DNSScheme = "dns+http"

// DefaultPath is the path of a target URL that names none.
const DefaultPath = "/metrics"

// Target is one configured scrape target.
type Target struct {
	// URL is an http or https URL. For a DNS target it is the http URL
	// whose host is the name to expand; for a Kubernetes target, the http
	// URL whose host is the Service and whose port is the one it names.
	URL *url.URL
	// DNS says the host is expanded on every sample.
	DNS bool
	// Kube, when set, says the target is a Service's EndpointSlices,
	// expanded on every sample (the scrape source's kube.go).
	Kube *Service
}

// Parse reads "http://host:port/path", "https://...",
// "dns+http://name:port/path" or "k8s://service:port/path". The path
// defaults to DefaultPath. Credentials and fragments are refused: metadata
// is not a secret store, and a fragment would never reach the server.
func Parse(s string) (Target, error) {
	s = strings.TrimSpace(s)
	if scheme, rest, ok := strings.Cut(s, "://"); ok && strings.EqualFold(scheme, KubeScheme) {
		return parseKube(rest)
	}
	u, err := url.Parse(s)
	if err != nil {
		return Target{}, err
	}
	u.Scheme = strings.ToLower(u.Scheme)
	var t Target
	switch u.Scheme {
	case "http", "https":
	case DNSScheme:
		t.DNS = true
		u.Scheme = "http"
	default:
		return Target{}, fmt.Errorf("scheme %q: use http://, https://, %s:// or %s://", u.Scheme, DNSScheme, KubeScheme)
	}
	switch {
	case u.Host == "" || u.Hostname() == "":
		return Target{}, errors.New("no host")
	case u.User != nil:
		return Target{}, errors.New("credentials in a target URL are not accepted")
	case u.Fragment != "":
		return Target{}, errors.New("a target URL has no fragment")
	case u.Opaque != "":
		return Target{}, errors.New("not an absolute URL with a host")
	}
	u.Host = strings.ToLower(u.Host)
	if u.Path == "" {
		u.Path = DefaultPath
	}
	t.URL = u
	return t, nil
}

// String is the target's canonical form, as configured.
func (t Target) String() string {
	s := t.URL.String()
	switch {
	case t.Kube != nil:
		return KubeScheme + strings.TrimPrefix(s, "http")
	case t.DNS:
		return "dns+" + s
	}
	return s
}

// Host is the host name or IP literal the target names, without port.
func (t Target) Host() string { return t.URL.Hostname() }

// KubeScheme marks a target whose replicas are the ready endpoints of a
// Service's EndpointSlices, in the namespace of the ScaledObject that names
// it (docs/kubernetes.md).
const KubeScheme = "k8s"

// Service is what a k8s:// target names.
type Service struct {
	// Service is the Service's name.
	Service string
	// Port is a port number, or the name of a port of the Service's
	// EndpointSlices.
	Port string
}

// Host is the name the allow-list vets for the Service in namespace, as
// DNS would spell it: a k8s:// target passes where its Service's
// cluster-local name would.
func (k Service) Host(namespace string) string {
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
	return Target{URL: u, Kube: &Service{Service: svc, Port: port}}, nil
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
