// Package kube is the scaler's window on the Kubernetes API: the
// EndpointSlices and Services of the namespaces its k8s:// scrape targets
// live in (discovery.go, endpoints.go), the pod-deletion-cost patches of
// victim hints (patch.go), the narrow client both go through (client.go,
// types.go), and how the scaler finds its credentials (config.go). One
// Discovery per scaler process shares one set of namespace-scoped
// informers per namespace among every target there.
package kube

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/tools/cache"

	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
)

// byService indexes EndpointSlices by the Service they belong to, so a
// sample reads its Service's slices without walking the namespace's.
const byService = "service"

// Discovery watches EndpointSlices and Services, one namespace at a time:
// a namespace's informers start with its first Acquire and stop when its
// last user releases it, so the scaler watches only the namespaces it
// scales, with the least a namespace-scoped Role has to grant. Safe for
// concurrent use.
type Discovery struct {
	api Lister

	mu     sync.Mutex
	spaces map[string]*space
}

// space is one watched namespace: an informer of its EndpointSlices and
// one of its Services.
type space struct {
	name     string
	refs     int
	slices   cache.Indexer
	services cache.Indexer
	synced   []cache.InformerSynced
	stop     chan struct{}
	running  sync.WaitGroup // the informers' goroutines
}

var _ discovery.Discovery = (*Discovery)(nil)

// NewDiscovery returns a Discovery that reads through api (a *Client). It
// does no I/O until a namespace is acquired.
func NewDiscovery(api Lister) *Discovery {
	return &Discovery{api: api, spaces: map[string]*space{}}
}

// Acquire starts watching namespace, or shares the watch already running.
// The release it returns is idempotent.
func (d *Discovery) Acquire(namespace string) (discovery.Namespace, func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.spaces[namespace]
	if s == nil {
		s = d.start(namespace)
		d.spaces[namespace] = s
	}
	s.refs++
	var once sync.Once
	return s, func() { once.Do(func() { d.release(s) }) }
}

// Watching returns the namespaces watched now, for tests and debugging.
func (d *Discovery) Watching() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int, len(d.spaces))
	for name, s := range d.spaces {
		out[name] = s.refs
	}
	return out
}

func (d *Discovery) start(namespace string) *space {
	// The slices' informer is built with the byService index from the
	// start (an index added later would have to be added before Run).
	slices := cache.NewSharedIndexInformer(d.api.EndpointSlices(namespace), &endpointSlice{}, 0, cache.Indexers{byService: serviceOf})
	services := cache.NewSharedIndexInformer(d.api.Services(namespace), &service{}, 0, cache.Indexers{})
	s := &space{
		name: namespace, slices: slices.GetIndexer(), services: services.GetIndexer(),
		synced: []cache.InformerSynced{slices.HasSynced, services.HasSynced},
		stop:   make(chan struct{}),
	}
	for _, inf := range []cache.SharedIndexInformer{slices, services} {
		s.running.Go(func() { inf.Run(s.stop) })
	}
	return s
}

// release ends one use of s; the last one stops its informers and waits
// for them, outside the lock, so a slow stop holds up no other namespace.
func (d *Discovery) release(s *space) {
	d.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last {
		delete(d.spaces, s.name)
	}
	d.mu.Unlock()
	if last {
		close(s.stop)
		s.running.Wait()
	}
}

// serviceOf is the byService index: a slice's Service, from the label the
// EndpointSlice controller sets.
func serviceOf(obj any) ([]string, error) {
	es, ok := obj.(*endpointSlice)
	if !ok {
		return nil, nil
	}
	if name := es.Labels[serviceNameLabel]; name != "" {
		return []string{name}, nil
	}
	return nil, nil
}

// waitSynced waits for the namespace's first listing, at most until ctx
// ends.
func (s *space) waitSynced(ctx context.Context) error {
	if cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return nil
	}
	return fmt.Errorf("kubernetes: the EndpointSlices and Services of namespace %s are not listed yet: %w", s.name, context.Cause(ctx))
}
