package scrape

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
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
	// expanded on every sample (kube.go).
	Kube *KubeService
}

// ParseTarget reads "http://host:port/path", "https://...",
// "dns+http://name:port/path" or "k8s://service:port/path". The path
// defaults to DefaultPath. Credentials and fragments are refused: metadata
// is not a secret store, and a fragment would never reach the server.
func ParseTarget(s string) (Target, error) {
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

// Resolver looks up a name's addresses. *net.Resolver satisfies it; tests
// inject their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// job is one replica to scrape in one sample.
type job struct {
	name string // the replica's name: the URL scraped, or its pod's name
	url  string // the URL scraped
	pod  string // the replica's pod, where the target knows it
	key  string // the endpoint dialled, see endpoint
}

// expansion is what a sample's targets expand to: the replicas to scrape,
// those that could not be reached, and, from Kubernetes targets, the pods
// that exist but are not (or no longer) replicas.
type expansion struct {
	jobs        []job
	missing     []pressure.MissingReplica
	starting    []string
	terminating []string
}

// expand turns the targets into this sample's replicas. A static target is
// one replica named by its URL. A DNS target becomes one replica per address,
// named by the URL with the address in place of the name; an address the
// allow-list refuses, and a lookup that fails, are reported missing rather
// than scraped. A name that does not exist, or has no address, is a
// Service with no ready pods: it adds no replica and nothing missing.
//
// A Kubernetes target expands as kube.go says.
//
// An endpoint reached through several targets (a Service named short and
// fully qualified, a static URL that is also a DNS expansion) is one
// replica, scraped once under the first target's name: scraping it twice
// would count its pressure, and its queue, twice.
//
// static holds the job of each static target (staticJobs), the same at
// every sample.
func expand(ctx context.Context, targets []Target, static []job, r Resolver, k *kubeSpace, guard *allow.List, conc int) expansion {
	per := make([]expansion, len(targets))
	forEach(len(targets), conc, func(i int) {
		t := targets[i]
		switch {
		case t.Kube != nil:
			per[i] = k.expand(ctx, t, guard)
		case t.DNS:
			per[i].jobs, per[i].missing = resolve(ctx, t, r, guard)
		default:
			per[i].jobs = static[i : i+1 : i+1]
		}
	})
	var out expansion
	for _, e := range per {
		out.jobs = append(out.jobs, e.jobs...)
		out.missing = append(out.missing, e.missing...)
		out.starting = append(out.starting, e.starting...)
		out.terminating = append(out.terminating, e.terminating...)
	}
	out.jobs, out.missing = dedupe(out.jobs, out.missing)
	slices.Sort(out.starting)
	slices.Sort(out.terminating)
	out.starting, out.terminating = slices.Compact(out.starting), slices.Compact(out.terminating)
	return out
}

// staticJobs is the job of each static target, by the targets' index (a
// zero job for the others): a static target is one replica named by its URL.
func staticJobs(targets []Target) []job {
	jobs := make([]job, len(targets))
	for i, t := range targets {
		if t.Kube == nil && !t.DNS {
			u := t.URL.String()
			jobs[i] = job{name: u, url: u, key: endpoint(t.URL)}
		}
	}
	return jobs
}

// dedupe keeps the first job of each endpoint, and drops a missing replica
// named twice or also scraped.
func dedupe(jobs []job, missing []pressure.MissingReplica) ([]job, []pressure.MissingReplica) {
	seen := make(map[string]bool, len(jobs))
	names := make(map[string]bool, len(jobs))
	jobs = slices.DeleteFunc(jobs, func(j job) bool {
		if seen[j.key] {
			return true
		}
		seen[j.key], names[j.name] = true, true
		return false
	})
	missing = slices.DeleteFunc(missing, func(m pressure.MissingReplica) bool {
		if names[m.Name] {
			return true
		}
		names[m.Name] = true
		return false
	})
	return jobs, missing
}

// endpoint is what a URL dials and asks for: scheme, host and port (the
// scheme's default made explicit, an IP address in canonical form), path
// and query.
func endpoint(u *url.URL) string {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	return u.Scheme + "://" + net.JoinHostPort(host, port) + u.EscapedPath() + "?" + u.RawQuery
}

func resolve(ctx context.Context, t Target, r Resolver, guard *allow.List) ([]job, []pressure.MissingReplica) {
	host, port := t.URL.Hostname(), t.URL.Port()
	if port == "" {
		port = "80"
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if dnsErr, ok := errors.AsType[*net.DNSError](err); ok && dnsErr.IsNotFound {
		// NXDOMAIN or no records: what Kubernetes DNS answers for a
		// headless Service without ready pods. Zero replicas, not a failure.
		return nil, nil
	}
	if err != nil {
		return nil, []pressure.MissingReplica{{Name: t.String(), Err: fmt.Errorf("resolve %s: %w", host, err)}}
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap()
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	addrs = slices.Compact(addrs)

	var jobs []job
	var missing []pressure.MissingReplica
	for _, a := range addrs {
		u := *t.URL
		u.Host = net.JoinHostPort(a.String(), port)
		name := u.String()
		if guard != nil {
			if err := guard.Addr(host, a); err != nil {
				missing = append(missing, pressure.MissingReplica{Name: name, Err: err})
				continue
			}
		}
		jobs = append(jobs, job{name: name, url: name, key: endpoint(&u)})
	}
	return jobs, missing
}
