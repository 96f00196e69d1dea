package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

var (
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

const (
	adapterService = "keda-metrics-apiserver"
	apiServiceName = "v1beta1.external.metrics.k8s.io"
)

// kedaObjects creates what KEDA's manifests would: its namespace, its CRDs,
// the adapter's Service with a manual EndpointSlice at the namespace
// address, and the APIService that sends external metrics to it.
func (c *Cluster) kedaObjects(ctx context.Context) error {
	if err := c.crds(ctx); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kedaNamespace}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: adapterService, Namespace: kedaNamespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt32(adapterPort), Protocol: corev1.ProtocolTCP,
		}}},
	}
	if _, err := c.Client.CoreV1().Services(kedaNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	name, port, ready := "https", int32(adapterPort), true
	proto := corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: adapterService + "-e2e", Namespace: kedaNamespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: adapterService,
				discoveryv1.LabelManagedBy:   "barometer-e2e",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{c.cfg.NetNS.NSIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	if _, err := c.Client.DiscoveryV1().EndpointSlices(kedaNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("endpointslice: %w", err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": apiServiceName},
		"spec": map[string]any{
			"service":              map[string]any{"name": adapterService, "namespace": kedaNamespace, "port": int64(443)},
			"group":                "external.metrics.k8s.io",
			"version":              "v1beta1",
			"caBundle":             base64.StdEncoding.EncodeToString(c.certs.ca.CertPEM),
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
		},
	}}
	if _, err := c.Dynamic.Resource(apiServiceGVR).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("apiservice: %w", err)
	}
	return nil
}

// crds creates every CRD in CRDDir and waits until each is established.
func (c *Cluster) crds(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(c.cfg.CRDDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", c.cfg.CRDDir)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
				continue
			}
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if obj == nil {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			if _, err := c.Dynamic.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create CRD %s: %w", u.GetName(), err)
			}
			names = append(names, u.GetName())
		}
	}
	for _, n := range names {
		err := Poll(ctx, 60*time.Second, "CRD "+n+" established", func(ctx context.Context) error {
			u, err := c.Dynamic.Resource(crdGVR).Get(ctx, n, getOpts)
			if err != nil {
				return err
			}
			if !conditionTrue(u, "Established") {
				return fmt.Errorf("not established yet")
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) apiServiceAvailable(ctx context.Context) error {
	u, err := c.Dynamic.Resource(apiServiceGVR).Get(ctx, apiServiceName, getOpts)
	if err != nil {
		return err
	}
	if !conditionTrue(u, "Available") {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		return fmt.Errorf("APIService not available: %v", conds)
	}
	// Available also means the aggregator reached the adapter; a list
	// through it proves the whole path.
	_, err = c.Client.Discovery().RESTClient().Get().AbsPath("/apis/external.metrics.k8s.io/v1beta1").DoRaw(ctx)
	return err
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
