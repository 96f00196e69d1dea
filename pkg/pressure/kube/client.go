package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Lister is what Discovery reads the API through: a list-and-watch of one
// namespace's EndpointSlices or Services, for its informers. Client
// implements it over HTTP.
type Lister interface {
	EndpointSlices(namespace string) cache.ListerWatcher
	Services(namespace string) cache.ListerWatcher
}

// Client is the scaler's narrow Kubernetes client: client-go REST clients
// of the two API groups it uses, discovery.k8s.io/v1 (EndpointSlices) and
// core v1 (Services, and pods for victim hints), decoding through a scheme
// of the two kinds it reads (types.go) and nothing else. client-go's typed
// clientset would compile in every API group's types for these three
// resources (docs/kubernetes.md, "The client").
type Client struct {
	core      rest.Interface // /api/v1
	discovery rest.Interface // /apis/discovery.k8s.io/v1
}

var _ Lister = (*Client)(nil)

// NewClient returns the client that talks to the API server cfg names. Its
// two REST clients share one HTTP client, so over HTTP/2 one connection
// carries every list, watch and patch.
func NewClient(cfg *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	addKinds(scheme)
	// The API's own kinds (Status, WatchEvent, the list options) as every
	// group version reads them.
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()

	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes HTTP client: %w", err)
	}
	restFor := func(apiPath string, gv schema.GroupVersion) (rest.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.APIPath, c.GroupVersion, c.NegotiatedSerializer = apiPath, &gv, codecs
		// JSON, whatever client-go's feature gates prefer: the narrow kinds
		// have no protobuf or CBOR encoding compiled in.
		c.ContentType, c.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
		return rest.RESTClientForConfigAndClient(c, httpClient)
	}
	core, err := restFor("/api", coreV1)
	if err != nil {
		return nil, fmt.Errorf("kubernetes core/v1 client: %w", err)
	}
	disc, err := restFor("/apis", discoveryV1)
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery.k8s.io/v1 client: %w", err)
	}
	return &Client{core: core, discovery: disc}, nil
}

// EndpointSlices lists and watches namespace's EndpointSlices.
func (c *Client) EndpointSlices(namespace string) cache.ListerWatcher {
	return cache.NewListWatchFromClient(c.discovery, "endpointslices", namespace, fields.Everything())
}

// Services lists and watches namespace's Services.
func (c *Client) Services(namespace string) cache.ListerWatcher {
	return cache.NewListWatchFromClient(c.core, "services", namespace, fields.Everything())
}

// patchPod applies a JSON merge patch to one pod, as the field manager
// "barometer".
func (c *Client) patchPod(ctx context.Context, namespace, pod string, patch []byte) error {
	return c.core.Patch(types.MergePatchType).
		Namespace(namespace).Resource("pods").Name(pod).
		VersionedParams(&metav1.PatchOptions{FieldManager: "barometer"}, metav1.ParameterCodec).
		Body(patch).Do(ctx).Error()
}
