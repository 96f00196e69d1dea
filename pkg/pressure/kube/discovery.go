// Package kube is the scaler's window on the Kubernetes API: the
// EndpointSlices and Services of the namespaces its k8s:// scrape targets
// live in (discovery.go, endpoints.go), the pod-deletion-cost patches of
// victim hints (patch.go), and how the scaler finds its credentials
// (config.go). One Discovery per scaler process shares one set of
// namespace-scoped informers per namespace among every target there.
package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/informers"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
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
	client kubernetes.Interface

	mu     sync.Mutex
	spaces map[string]*space
}

// space is one watched namespace.
type space struct {
	name     string
	refs     int
	factory  informers.SharedInformerFactory
	slices   cache.Indexer
	services corelisters.ServiceLister
	synced   []cache.InformerSynced
	stop     chan struct{}
}

var _ discovery.Discovery = (*Discovery)(nil)

// NewDiscovery returns a Discovery that reads through client. It does no
// I/O until a namespace is acquired.
func NewDiscovery(client kubernetes.Interface) *Discovery {
	return &Discovery{client: client, spaces: map[string]*space{}}
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
	f := informers.NewSharedInformerFactoryWithOptions(d.client, 0, informers.WithNamespace(namespace))
	// The slices' informer is built with the byService index from the
	// start (an index added later would have to be added before Start).
	slices := f.InformerFor(&discoveryv1.EndpointSlice{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return discoveryinformers.NewEndpointSliceInformer(c, namespace, resync, cache.Indexers{byService: serviceOf})
	})
	services := f.Core().V1().Services()
	s := &space{
		name: namespace, factory: f, slices: slices.GetIndexer(), services: services.Lister(),
		synced: []cache.InformerSynced{slices.HasSynced, services.Informer().HasSynced},
		stop:   make(chan struct{}),
	}
	f.Start(s.stop)
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
		s.factory.Shutdown()
	}
}

// serviceOf is the byService index: a slice's Service, from the label the
// EndpointSlice controller sets.
func serviceOf(obj any) ([]string, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	if name := es.Labels[discoveryv1.LabelServiceName]; name != "" {
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
