package peer

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
)

// fakeDiscovery stands in for the scaler's Kubernetes discovery (package
// kube, whose tests run its informers against the API's JSON over HTTP):
// it answers the Service barometer-peers with the endpoints a test sets.
type fakeDiscovery struct {
	eps       []discovery.Endpoint
	namespace string
}

func (f *fakeDiscovery) Acquire(ns string) (discovery.Namespace, func()) {
	f.namespace = ns
	return f, func() {}
}

func (f *fakeDiscovery) Endpoints(_ context.Context, service, port string) ([]discovery.Endpoint, error) {
	if service != "barometer-peers" || port != "otlp-peer" {
		return nil, discovery.ErrNoService
	}
	return f.eps, nil
}

// The peers a Service lists are its ready and starting pods, on the port
// its slices name, never a terminating pod nor this replica's own.
func TestKubePeers(t *testing.T) {
	ep := func(ip, pod string, st discovery.State) discovery.Endpoint {
		return discovery.Endpoint{Addr: netip.MustParseAddr(ip), Port: 4319, Pod: pod, State: st}
	}
	disc := &fakeDiscovery{eps: []discovery.Endpoint{
		ep("10.0.0.1", "barometer-a", discovery.Ready),
		ep("10.0.0.2", "barometer-b", discovery.Starting),
		ep("10.0.0.3", "barometer-c", discovery.Terminating),
		ep("10.0.0.4", "barometer-self", discovery.Ready),
		ep("127.0.0.1", "", discovery.Ready), // this replica, by its address
	}}
	m, err := parseMembers("k8s://barometer-peers.barometer:otlp-peer", disc, nil, "barometer-self")
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	m.(*kubeMembers).listening(4319)
	got, err := m.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.0.0.1:4319", "10.0.0.2:4319"}; !slices.Equal(got, want) || disc.namespace != "barometer" || m.static() {
		t.Errorf("peers %v in namespace %q, want %v in barometer", got, disc.namespace, want)
	}
}

// BAROMETER_PEERS is refused naming what is allowed, and a k8s:// one
// where the scaler has no Kubernetes says why.
func TestPeersSpecRefusals(t *testing.T) {
	for _, spec := range []string{"k8s://barometer-peers:4319", "k8s://barometer-peers.barometer", "peer-without-port", "k8s://.barometer:4319"} {
		if _, err := parseMembers(spec, &fakeDiscovery{}, nil, ""); err == nil || !strings.Contains(err.Error(), "allowed") {
			t.Errorf("%q: %v, want a refusal saying what is allowed", spec, err)
		}
	}
	noKube := errors.New("no Kubernetes configuration")
	if _, err := parseMembers("k8s://barometer-peers.barometer:otlp-peer", nil, noKube, ""); err == nil || !strings.Contains(err.Error(), noKube.Error()) {
		t.Errorf("k8s:// without Kubernetes: %v", err)
	}
	m, err := parseMembers(" 10.0.0.1:4319, peer-b:4319 ,", nil, nil, "")
	if got, _ := m.read(context.Background()); err != nil || !slices.Equal(got, []string{"10.0.0.1:4319", "peer-b:4319"}) || !m.static() {
		t.Errorf("static peers: %v %v", got, err)
	}
}
