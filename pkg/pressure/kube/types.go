package kube

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The two kinds the informers hold, with only the fields the scaler reads.
// They decode the API server's JSON (names matched exactly, as
// apimachinery's decoder does; the fields left out are skipped), so the
// binary carries these few types rather than k8s.io/api's core and
// discovery groups (docs/kubernetes.md, "The client"). The field names
// are those of discovery.k8s.io/v1 and core v1, which are stable APIs:
// the tests decode what k8s.io/api's own types encode.

var (
	coreV1      = schema.GroupVersion{Version: "v1"}
	discoveryV1 = schema.GroupVersion{Group: "discovery.k8s.io", Version: "v1"}
)

// serviceNameLabel is the label the EndpointSlice controller puts on each
// slice naming its Service.
const serviceNameLabel = "kubernetes.io/service-name"

// addressTypeFQDN is the EndpointSlice address type that holds names, not
// IPs.
const addressTypeFQDN = "FQDN"

// endpointSlice is a discovery.k8s.io/v1 EndpointSlice.
type endpointSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	AddressType       string         `json:"addressType"`
	Endpoints         []endpoint     `json:"endpoints"`
	Ports             []endpointPort `json:"ports"`
}

type endpoint struct {
	Addresses  []string           `json:"addresses"`
	Conditions endpointConditions `json:"conditions"`
	TargetRef  *objectReference   `json:"targetRef,omitempty"`
}

// endpointConditions are pointers because unset means something: ready
// unset is ready, terminating unset is not terminating.
type endpointConditions struct {
	Ready       *bool `json:"ready,omitempty"`
	Terminating *bool `json:"terminating,omitempty"`
}

type objectReference struct {
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
}

type endpointPort struct {
	Name *string `json:"name,omitempty"`
	Port *int32  `json:"port,omitempty"`
}

type endpointSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []endpointSlice `json:"items"`
}

// service is a core v1 Service: its metadata is all a sample asks of it
// (that it exists).
type service struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

type serviceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []service `json:"items"`
}

// addKinds registers the four kinds under their API group versions.
func addKinds(s *runtime.Scheme) {
	s.AddKnownTypeWithName(coreV1.WithKind("Service"), &service{})
	s.AddKnownTypeWithName(coreV1.WithKind("ServiceList"), &serviceList{})
	s.AddKnownTypeWithName(discoveryV1.WithKind("EndpointSlice"), &endpointSlice{})
	s.AddKnownTypeWithName(discoveryV1.WithKind("EndpointSliceList"), &endpointSliceList{})
}

// DeepCopyObject implements runtime.Object.
func (s *endpointSlice) DeepCopyObject() runtime.Object { return s.deepCopy() }

func (s *endpointSlice) deepCopy() *endpointSlice {
	out := &endpointSlice{TypeMeta: s.TypeMeta, AddressType: s.AddressType}
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if s.Endpoints != nil {
		out.Endpoints = make([]endpoint, len(s.Endpoints))
		for i, e := range s.Endpoints {
			out.Endpoints[i] = endpoint{
				Addresses: slices.Clone(e.Addresses),
				Conditions: endpointConditions{
					Ready:       clonePtr(e.Conditions.Ready),
					Terminating: clonePtr(e.Conditions.Terminating),
				},
				TargetRef: clonePtr(e.TargetRef),
			}
		}
	}
	if s.Ports != nil {
		out.Ports = make([]endpointPort, len(s.Ports))
		for i, p := range s.Ports {
			out.Ports[i] = endpointPort{Name: clonePtr(p.Name), Port: clonePtr(p.Port)}
		}
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *endpointSliceList) DeepCopyObject() runtime.Object {
	out := &endpointSliceList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]endpointSlice, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].deepCopy()
		}
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (s *service) DeepCopyObject() runtime.Object { return s.deepCopy() }

func (s *service) deepCopy() *service {
	out := &service{TypeMeta: s.TypeMeta}
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *serviceList) DeepCopyObject() runtime.Object {
	out := &serviceList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]service, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].deepCopy()
		}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
