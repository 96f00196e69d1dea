package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A deep copy shares nothing with its original: an informer's cache hands
// out the objects it holds, and a copy a caller changes must not change them.
func TestDeepCopySharesNothing(t *testing.T) {
	ready, name, port := true, "metrics", int32(9100)
	orig := &endpointSliceList{Items: []endpointSlice{{
		ObjectMeta: metav1.ObjectMeta{Name: "web-a", Labels: map[string]string{serviceNameLabel: "web"}},
		Endpoints: []endpoint{{
			Addresses:  []string{"10.0.0.1"},
			Conditions: endpointConditions{Ready: &ready},
			TargetRef:  &objectReference{Kind: "Pod", Name: "web-a"},
		}},
		Ports: []endpointPort{{Name: &name, Port: &port}},
	}}}
	cp := orig.DeepCopyObject().(*endpointSliceList)
	s := &cp.Items[0]
	s.Labels[serviceNameLabel] = "other"
	s.Endpoints[0].Addresses[0] = "10.9.9.9"
	*s.Endpoints[0].Conditions.Ready = false
	s.Endpoints[0].TargetRef.Name = "x"
	*s.Ports[0].Name, *s.Ports[0].Port = "x", 1
	o := orig.Items[0]
	if o.Labels[serviceNameLabel] != "web" || o.Endpoints[0].Addresses[0] != "10.0.0.1" || !*o.Endpoints[0].Conditions.Ready ||
		o.Endpoints[0].TargetRef.Name != "web-a" || *o.Ports[0].Name != "metrics" || *o.Ports[0].Port != 9100 {
		t.Errorf("changing the copy changed the original: %+v", o)
	}

	svc := &serviceList{Items: []service{{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"a": "b"}}}}}
	svc.DeepCopyObject().(*serviceList).Items[0].Labels["a"] = "c"
	if svc.Items[0].Labels["a"] != "b" {
		t.Error("changing a Service's copy changed the original")
	}
}
