package kube

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
)

// Endpoints reads service's endpoints on port from the namespace's
// informers: no API call per sample. A port given as a number is the pod's
// port, as a target URL names it; a name is looked up in each slice's
// ports (an EndpointSlice names its ports after the Service's); "" is every
// endpoint whatever its ports (Port 0), for a reader that wants the pods,
// not an address to dial. An endpoint that appears in several slices (as
// one moves between them) is counted once, in its most live state.
func (s *space) Endpoints(ctx context.Context, service, port string) ([]discovery.Endpoint, error) {
	if err := s.waitSynced(ctx); err != nil {
		return nil, err
	}
	if _, found, err := s.services.GetByKey(s.name + "/" + service); err != nil {
		return nil, fmt.Errorf("service %s/%s: %w", s.name, service, err)
	} else if !found {
		return nil, fmt.Errorf("service %s/%s: %w", s.name, service, discovery.ErrNoService)
	}
	objs, err := s.slices.ByIndex(byService, service)
	if err != nil {
		return nil, fmt.Errorf("endpointslices of service %s/%s: %w", s.name, service, err)
	}
	number, numeric := parsePort(port)
	byAddr := map[netip.AddrPort]discovery.Endpoint{}
	var named []string // the port names the slices offer, for the error
	unmatched := false // a slice with endpoints lacked the named port
	for _, obj := range objs {
		es, ok := obj.(*endpointSlice)
		if !ok || es.AddressType == addressTypeFQDN || es.Namespace != s.name {
			continue
		}
		p, found := number, numeric || port == ""
		if !found {
			p, found = portNamed(es.Ports, port)
		}
		if !found {
			unmatched = unmatched || len(es.Endpoints) > 0
			for _, sp := range es.Ports {
				named = append(named, cmp.Or(ptrString(sp.Name), "(unnamed)"))
			}
			continue
		}
		for _, e := range es.Endpoints {
			for _, ep := range endpointsOf(e, p) {
				k := netip.AddrPortFrom(ep.Addr, ep.Port)
				if old, dup := byAddr[k]; !dup || ep.State < old.State {
					byAddr[k] = ep
				}
			}
		}
	}
	if len(byAddr) == 0 && unmatched {
		slices.Sort(named)
		return nil, fmt.Errorf("service %s/%s: no port named %q (its EndpointSlices name: %s)", s.name, service, port, strings.Join(slices.Compact(named), ", "))
	}
	out := make([]discovery.Endpoint, 0, len(byAddr))
	for _, ep := range byAddr {
		out = append(out, ep)
	}
	slices.SortFunc(out, func(a, b discovery.Endpoint) int {
		return cmp.Or(strings.Compare(a.Pod, b.Pod), a.Addr.Compare(b.Addr), cmp.Compare(a.Port, b.Port))
	})
	return out, nil
}

// endpointsOf reads one endpoint of a slice. Its conditions read as the API
// defines them: ready and serving unset mean true, terminating unset means
// false. The EndpointSlice controller sets ready to false for a
// terminating pod, so terminating is tested first.
func endpointsOf(e endpoint, port uint16) []discovery.Endpoint {
	state := discovery.Ready
	switch {
	case e.Conditions.Terminating != nil && *e.Conditions.Terminating:
		state = discovery.Terminating
	case e.Conditions.Ready != nil && !*e.Conditions.Ready:
		state = discovery.Starting
	}
	pod := ""
	if r := e.TargetRef; r != nil && r.Kind == "Pod" {
		pod = r.Name
	}
	var out []discovery.Endpoint
	for _, a := range e.Addresses {
		addr, err := netip.ParseAddr(a)
		if err != nil {
			continue // not an IP: the API validates IP slices, so nothing real
		}
		out = append(out, discovery.Endpoint{Addr: addr.Unmap(), Port: port, Pod: pod, State: state})
	}
	return out
}

// parsePort reads a port number; false for a name.
func parsePort(s string) (uint16, bool) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint16(n), true
}

func portNamed(ports []endpointPort, name string) (uint16, bool) {
	for _, p := range ports {
		if ptrString(p.Name) == name && p.Port != nil && *p.Port > 0 && *p.Port <= 65535 {
			return uint16(*p.Port), true
		}
	}
	return 0, false
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
