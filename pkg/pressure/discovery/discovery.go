// Package discovery is what the scrape source asks of a service discovery
// that knows more than DNS can tell: which endpoints of a Service are ready,
// which are still starting and which are on their way out, and which pod
// each one is. Package kube answers it from Kubernetes EndpointSlices; the
// scrape source depends on these types only, so it never imports client-go.
package discovery

import (
	"context"
	"errors"
	"net/netip"
)

// State is an endpoint's place in its pod's life.
type State int

// The states an endpoint can be in.
const (
	// Ready endpoints are the replicas: they are scraped.
	Ready State = iota
	// Starting endpoints exist but are not ready yet: counted, not scraped
	// (a replica that cannot answer yet is not a replica that failed).
	Starting
	// Terminating endpoints are leaving (even while still serving): named,
	// never scraped, so a pod being drained does not hold pressure up.
	Terminating
)

// Endpoint is one address of a Service, on the port the target asked for.
type Endpoint struct {
	Addr netip.Addr
	Port uint16
	// Pod is the pod behind the endpoint (its targetRef), "" when the
	// endpoint is not a pod's.
	Pod   string
	State State
}

// ErrNoService is wrapped by Namespace.Endpoints when the Service does not
// exist: a misspelt name must fail, not read as a workload at zero.
var ErrNoService = errors.New("no such Service")

// Namespace answers for the Services of one namespace.
type Namespace interface {
	// Endpoints returns the endpoints of service on port (a number, the
	// name of an EndpointSlice port, or "" for every endpoint whatever its
	// ports, Port 0), sorted by pod name then address. A
	// Service with no endpoints yields none and no error. It waits, at most
	// until ctx ends, for the namespace's first full listing.
	Endpoints(ctx context.Context, service, port string) ([]Endpoint, error)
}

// Discovery hands out namespaces. Acquire starts watching a namespace on
// its first use; the returned release ends this use, and the watch stops
// when the last use of the namespace is released.
type Discovery interface {
	Acquire(namespace string) (ns Namespace, release func())
}
