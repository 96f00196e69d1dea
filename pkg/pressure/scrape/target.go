package scrape

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape/target"
)

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
func expand(ctx context.Context, targets []target.Target, static []job, r Resolver, k *kubeSpace, guard *allow.List, conc int) expansion {
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
func staticJobs(targets []target.Target) []job {
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

func resolve(ctx context.Context, t target.Target, r Resolver, guard *allow.List) ([]job, []pressure.MissingReplica) {
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
