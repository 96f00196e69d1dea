// These tests run the narrow client and its informers against apiServer
// (apiserver_test.go), a stand-in for kube-apiserver answering the API's
// JSON over real HTTP; the end-to-end suite (e2e/) covers the real
// kube-apiserver and EndpointSlice controller.
package kube

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"net/http/httptest"

	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
)

func coreService(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

type ep struct {
	ip, pod                   string
	ready, terminating, unset bool
}

func slice(ns, svc, name string, port int32, portName string, eps ...ep) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
	}
	for _, e := range eps {
		x := discoveryv1.Endpoint{Addresses: []string{e.ip}}
		if !e.unset {
			x.Conditions = discoveryv1.EndpointConditions{Ready: &e.ready, Terminating: &e.terminating}
		}
		if e.pod != "" {
			x.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: e.pod}
		}
		es.Endpoints = append(es.Endpoints, x)
	}
	return es
}

func TestEndpointsStatesAndPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPIServer(t)
		api.put(
			coreService("shop", "web"), coreService("shop", "empty"),
			slice("shop", "web", "web-a", 9100, "metrics",
				ep{ip: "10.0.0.2", pod: "web-b", ready: true},
				ep{ip: "10.0.0.1", pod: "web-a", unset: true}, // unset conditions read as ready
				ep{ip: "10.0.0.3", pod: "web-c", ready: false},
				ep{ip: "10.0.0.4", pod: "web-d", ready: false, terminating: true}),
			// The same endpoint in a second slice, as during a move: once.
			slice("shop", "web", "web-b", 9100, "metrics", ep{ip: "10.0.0.2", pod: "web-b", ready: true}),
			// Another Service's slice and another namespace's are not read.
			slice("shop", "other", "other-a", 9100, "metrics", ep{ip: "10.0.0.9", pod: "other", ready: true}),
			coreService("elsewhere", "web"),
			slice("elsewhere", "web", "web-x", 9100, "metrics", ep{ip: "10.0.1.1", pod: "x", ready: true}),
		)
		d := NewDiscovery(serveInBubble(t, api))
		ns, release := d.Acquire("shop")
		defer release()
		ctx := context.Background()

		// "" reads the pods whatever their ports, at port 0.
		for _, port := range []string{"metrics", "9100", ""} {
			got, err := ns.Endpoints(ctx, "web", port)
			if err != nil {
				t.Fatal(err)
			}
			n := uint16(9100)
			if port == "" {
				n = 0
			}
			want := []discovery.Endpoint{
				{Addr: netip.MustParseAddr("10.0.0.1"), Port: n, Pod: "web-a", State: discovery.Ready},
				{Addr: netip.MustParseAddr("10.0.0.2"), Port: n, Pod: "web-b", State: discovery.Ready},
				{Addr: netip.MustParseAddr("10.0.0.3"), Port: n, Pod: "web-c", State: discovery.Starting},
				{Addr: netip.MustParseAddr("10.0.0.4"), Port: n, Pod: "web-d", State: discovery.Terminating},
			}
			if len(got) != len(want) {
				t.Fatalf("port %s: %+v, want %+v", port, got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("port %s: endpoint %d %+v, want %+v", port, i, got[i], want[i])
				}
			}
		}

		if _, err := ns.Endpoints(ctx, "web", "http"); err == nil || !strings.Contains(err.Error(), `no port named "http"`) || !strings.Contains(err.Error(), "metrics") {
			t.Errorf("unknown port name: %v", err)
		}
		if _, err := ns.Endpoints(ctx, "wbe", "metrics"); !errors.Is(err, discovery.ErrNoService) || !strings.Contains(err.Error(), "shop/wbe") {
			t.Errorf("missing Service: %v, want ErrNoService naming shop/wbe", err)
		}
		if got, err := ns.Endpoints(ctx, "empty", "metrics"); err != nil || len(got) != 0 {
			t.Errorf("Service without endpoints: %+v, %v; want none and no error", got, err)
		}

		// A pod that turns ready is seen by the next read, through the watch.
		api.put(slice("shop", "web", "web-a", 9100, "metrics", ep{ip: "10.0.0.3", pod: "web-c", ready: true}))
		synctest.Wait()
		got, err := ns.Endpoints(ctx, "web", "metrics")
		if err != nil || len(got) != 2 || got[1].Pod != "web-c" || got[1].State != discovery.Ready {
			t.Errorf("after the update: %+v, %v", got, err)
		}
	})
}

func TestAcquireIsRefCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPIServer(t)
		api.put(coreService("a", "web"))
		d := NewDiscovery(serveInBubble(t, api))
		_, r1 := d.Acquire("a")
		_, r2 := d.Acquire("a")
		_, r3 := d.Acquire("b")
		if w := d.Watching(); w["a"] != 2 || w["b"] != 1 || len(w) != 2 {
			t.Fatalf("watching %v, want a twice and b once", w)
		}
		r1()
		r1() // idempotent: does not release the other use
		if w := d.Watching(); w["a"] != 1 {
			t.Fatalf("after one release of a: %v", w)
		}
		r2()
		r3()
		if w := d.Watching(); len(w) != 0 {
			t.Fatalf("after the last releases: %v, want nothing watched", w)
		}
		// A namespace acquired again starts a fresh watch that works.
		ns, r4 := d.Acquire("a")
		defer r4()
		if _, err := ns.Endpoints(context.Background(), "web", "80"); err != nil {
			t.Fatal(err)
		}
	})
}

// The patch travels over a real loopback socket: a merge patch of the one
// annotation, as the field manager "barometer"; a missing pod is an error.
func TestPatcherWritesTheAnnotation(t *testing.T) {
	api := newAPIServer(t)
	api.put(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-a", Annotations: map[string]string{"keep": "me"}}})
	srv := httptest.NewServer(api.handler())
	defer srv.Close()
	client, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPatcher(client)
	if err := p.SetDeletionCost(context.Background(), "shop", "web-a", 3); err != nil {
		t.Fatal(err)
	}
	if got := api.pods["shop/web-a"].Annotations; got[deletionCost] != "3" || got["keep"] != "me" {
		t.Errorf("annotations %v, want the cost 3 beside the others", got)
	}
	want := `shop/web-a application/merge-patch+json barometer {"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"3"}}}`
	if len(api.patched) != 1 || api.patched[0] != want {
		t.Errorf("patches %q, want [%s]", api.patched, want)
	}
	if err := p.SetDeletionCost(context.Background(), "shop", "gone", 1); err == nil || !strings.Contains(err.Error(), `pods "gone" not found`) {
		t.Errorf("patching a missing pod: %v, want the API's not found", err)
	}
}
