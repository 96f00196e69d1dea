package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Document is one YAML document of a file, decoded.
type Document struct {
	// File and Line locate the document's first line, for messages.
	File string
	Line int
	// GVK is the document's apiVersion and kind.
	GVK schema.GroupVersionKind
	// Object is a pointer to the typed object (*appsv1.Deployment,
	// *monitoringv1.ServiceMonitor, ...).
	Object any
	// JSON is the document converted to JSON.
	JSON []byte
}

// Where names the document in messages: file:line kind namespace/name.
func (d *Document) Where() string {
	m := d.Meta()
	name := m.Name
	if m.Namespace != "" {
		name = m.Namespace + "/" + name
	}
	return fmt.Sprintf("%s:%d %s %s", d.File, d.Line, d.GVK.Kind, name)
}

// Meta is the object's metadata.
func (d *Document) Meta() *metav1.ObjectMeta {
	if a, ok := d.Object.(metav1.ObjectMetaAccessor); ok {
		return a.GetObjectMeta().(*metav1.ObjectMeta)
	}
	return &metav1.ObjectMeta{}
}

// kinds is every kind the check knows: a document of any other kind fails,
// so nothing under examples/ escapes a typed check.
var kinds = map[schema.GroupVersionKind]func() any{
	corev1.SchemeGroupVersion.WithKind("Namespace"):                            func() any { return &corev1.Namespace{} },
	corev1.SchemeGroupVersion.WithKind("Service"):                              func() any { return &corev1.Service{} },
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"):                       func() any { return &corev1.ServiceAccount{} },
	corev1.SchemeGroupVersion.WithKind("Secret"):                               func() any { return &corev1.Secret{} },
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):                            func() any { return &corev1.ConfigMap{} },
	appsv1.SchemeGroupVersion.WithKind("Deployment"):                           func() any { return &appsv1.Deployment{} },
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"):                func() any { return &policyv1.PodDisruptionBudget{} },
	kedav1alpha1.GroupVersion.WithKind("ScaledObject"):                         func() any { return &kedav1alpha1.ScaledObject{} },
	kedav1alpha1.GroupVersion.WithKind("TriggerAuthentication"):                func() any { return &kedav1alpha1.TriggerAuthentication{} },
	kedav1alpha1.GroupVersion.WithKind("ClusterTriggerAuthentication"):         func() any { return &kedav1alpha1.ClusterTriggerAuthentication{} },
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):                  func() any { return &networkingv1.NetworkPolicy{} },
	rbacv1.SchemeGroupVersion.WithKind("Role"):                                 func() any { return &rbacv1.Role{} },
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"):                          func() any { return &rbacv1.RoleBinding{} },
	monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.ServiceMonitorsKind): func() any { return &monitoringv1.ServiceMonitor{} },
	monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PodMonitorsKind):     func() any { return &monitoringv1.PodMonitor{} },
	monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusRuleKind):  func() any { return &monitoringv1.PrometheusRule{} },
}

// clusterScoped kinds have no namespace.
var clusterScoped = map[string]bool{"Namespace": true, "ClusterTriggerAuthentication": true}

// ReadFile splits a file into documents and decodes each strictly.
func ReadFile(path string) ([]*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(path, data)
}

// Decode splits data into YAML documents and decodes each strictly: YAML
// with duplicate keys, a field the Go type does not have, a field spelled
// in another case, or a value of the wrong type (a number where KEDA's
// metadata wants a string) is an error. Documents holding only comments are
// skipped.
func Decode(file string, data []byte) ([]*Document, error) {
	var docs []*Document
	var errs []error
	for _, part := range split(data) {
		d, err := decodeOne(file, part.line, part.data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs, errors.Join(errs...)
}

type part struct {
	line int
	data []byte
}

// split cuts a YAML stream at its "---" lines, keeping each part's first
// line number.
func split(data []byte) []part {
	var parts []part
	var cur bytes.Buffer
	start, n := 1, 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "---" || strings.HasPrefix(line, "--- ") {
			parts = append(parts, part{start, bytes.Clone(cur.Bytes())})
			cur.Reset()
			start = n + 1
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	parts = append(parts, part{start, cur.Bytes()})
	// Point each part at its first line of content, past leading comments.
	for i := range parts {
		for l := range strings.SplitSeq(string(parts[i].data), "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				break
			}
			parts[i].line++
		}
	}
	return parts
}

func decodeOne(file string, line int, data []byte) (*Document, error) {
	at := fmt.Sprintf("%s:%d", file, line)
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil, nil // comments only
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return nil, fmt.Errorf("%s: not an object: %w", at, err)
	}
	gvk := tm.GroupVersionKind()
	newObj, ok := kinds[gvk]
	if !ok {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q: not a kind this check knows; add it to kinds in decode.go", at, tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	strict, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", at, gvk.Kind, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s %s: %w", at, gvk.Kind, errors.Join(strict...))
	}
	return &Document{File: file, Line: line, GVK: gvk, Object: obj, JSON: j}, nil
}
