package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/barometer-scaler/barometer/e2e/internal/cluster"
)

// The chart's release in the suite: e2e/run renders charts/barometer with
// `helm template barometer charts/barometer --namespace e2e -f
// e2e/chart-values.yaml` into the file E2E_CHART names, and the HA
// scenario applies it as helm install would. The pod runner runs the
// scaler binary for the chart's image (Config.Images).
const (
	chartRelease = "barometer"
	// scalerImage is the chart's image.repository.
	scalerImage = "ghcr.io/barometer-scaler/barometer"
	// chartSelector selects the release's pods (and ReplicaSets).
	chartSelector = "app.kubernetes.io/instance=" + chartRelease
	// chartOTLPCredentials is otlp.credentials.secretName: the scenario
	// makes it, the chart mounts it.
	chartOTLPCredentials = "barometer-otlp-credentials"
	// chartScalerAddress is the chart's scalerAddress: its headless gRPC
	// Service, which the pod runner's hosts file resolves to the ready
	// scaler pods, as cluster DNS would.
	chartScalerAddress = chartRelease + "." + namespace + ".svc.cluster.local:6000"
	// chartOTLPService is the OTLP receiver's ClusterIP Service.
	chartOTLPService = chartRelease + "-otlp"
)

var chartManifest = os.Getenv("E2E_CHART")

// installChart creates every object of the rendered chart. Cleanup deletes
// them, and what the controllers made of them (ReplicaSets, pods,
// EndpointSlices: no garbage collector runs).
func installChart(t *testing.T) {
	t.Helper()
	if chartManifest == "" {
		t.Fatal("E2E_CHART is unset: e2e/run renders the chart")
	}
	data, err := os.ReadFile(chartManifest)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(data)
	if err != nil {
		t.Fatalf("%s: %v", chartManifest, err)
	}
	ctx := t.Context()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.cluster.Client.Discovery()))
	var created []dynamic.ResourceInterface
	var names, services []string
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for i, r := range slices.Backward(created) {
			_ = r.Delete(ctx, names[len(created)-1-i], metav1.DeleteOptions{})
		}
		c := env.cluster.Client
		zero := int64(0)
		sel := metav1.ListOptions{LabelSelector: chartSelector}
		_ = c.AppsV1().ReplicaSets(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
		_ = c.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel)
		for _, s := range services {
			_ = c.DiscoveryV1().EndpointSlices(namespace).DeleteCollection(ctx, metav1.DeleteOptions{},
				metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + s})
		}
	})
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
		}
		var r dynamic.ResourceInterface = env.cluster.Dynamic.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			r = env.cluster.Dynamic.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := r.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", gvk.Kind, o.GetName(), err)
		}
		created, names = append(created, r), append(names, o.GetName())
		if gvk.Kind == "Service" {
			services = append(services, o.GetName())
		}
	}
}

// decodeManifests reads a multi-document YAML stream into objects,
// skipping empty documents.
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// scalerPod is one of the chart's scaler pods as the API shows it.
type scalerPod struct {
	Name, IP           string
	Ready, Terminating bool
}

// scalerPods lists the release's pods that have an address.
func scalerPods(ctx context.Context) ([]scalerPod, error) {
	pods, err := env.cluster.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: chartSelector})
	if err != nil {
		return nil, err
	}
	var out []scalerPod
	for _, p := range pods.Items {
		if p.Status.PodIP == "" {
			continue
		}
		sp := scalerPod{Name: p.Name, IP: p.Status.PodIP, Terminating: p.DeletionTimestamp != nil}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				sp.Ready = c.Status == corev1.ConditionTrue
			}
		}
		out = append(out, sp)
	}
	slices.SortFunc(out, func(a, b scalerPod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// waitScalerPods waits until exactly want pods of the release run, all
// ready and none terminating, none of them named in old; it returns them.
func waitScalerPods(ctx context.Context, timeout time.Duration, what string, want int, old []string) ([]scalerPod, error) {
	var last []scalerPod
	err := cluster.Poll(ctx, timeout, what, func(ctx context.Context) error {
		pods, err := scalerPods(ctx)
		if err != nil {
			return err
		}
		last = pods
		if len(pods) != want {
			return fmt.Errorf("%d pods: %+v", len(pods), pods)
		}
		for _, p := range pods {
			if !p.Ready || p.Terminating || slices.Contains(old, p.Name) {
				return fmt.Errorf("pods %+v", pods)
			}
		}
		return nil
	})
	return last, err
}
