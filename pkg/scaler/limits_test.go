package scaler

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// Past a limit a call is ResourceExhausted, naming the setting; a name
// Kubernetes would not accept, or a huge value, is InvalidArgument with at
// most a short prefix of the value in the message.
func TestLimitsAndBadInputOverGRPC(t *testing.T) {
	h := newHarness(t)
	h.reg = registrytest.NewRegistry(t, registry.Config{
		Schema:          trigger.NewSchema(registrytest.Kind("workload", "default", h.workload)),
		DefaultInterval: 50 * time.Millisecond, Limits: registry.Limits{Targets: 1},
	})
	h.srv.reg = h.reg
	if _, err := h.client.GetMetricSpec(ctxT(t), ref("a", nil)); err != nil {
		t.Fatal(err)
	}
	_, err := h.client.GetMetricSpec(ctxT(t), ref("b", map[string]string{"sampleInterval": "1s"}))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "BAROMETER_MAX_TARGETS") {
		t.Fatalf("second target: %v", err)
	}

	huge := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name string
		ref  *externalscaler.ScaledObjectRef
	}{
		{"long name", &externalscaler.ScaledObjectRef{Namespace: "shop", Name: huge}},
		{"name with a slash", &externalscaler.ScaledObjectRef{Namespace: "shop", Name: "a/b"}},
		{"empty name", &externalscaler.ScaledObjectRef{Namespace: "shop"}},
		{"bad namespace", &externalscaler.ScaledObjectRef{Namespace: "Shop", Name: "a"}},
		{"huge metricName", ref("a", map[string]string{"metricName": huge[:100000]})},
	} {
		_, err := h.client.GetMetricSpec(ctxT(t), c.ref)
		if status.Code(err) != codes.InvalidArgument || len(err.Error()) > 400 {
			t.Errorf("%s: %d bytes: %.200v", c.name, len(err.Error()), err)
		}
	}
}

// The names validRef admits are exactly those of the Kubernetes grammar,
// written here as the regular expressions validRef no longer runs.
func TestNamesFollowKubernetesGrammar(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	subdomain := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	names := []string{"", "a", "-", ".", "a-", "-a", "a-b", "a--b", "a.b", "a..b", ".a", "a.", "a.-b", "a-.b",
		"web-0.web", "Shop", "shop_1", "9", "a/b", "é", "a b", "a.b.c-d.e9"}
	// Every string of up to four bytes over an alphabet with each kind of
	// byte the grammar tells apart.
	alphabet := []string{"a", "0", "-", ".", "A", "_"}
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		names = append(names, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 4)
	for _, s := range names {
		if got, want := dnsLabel(s), label.MatchString(s); got != want {
			t.Errorf("dnsLabel(%q) = %v, want %v", s, got, want)
		}
		if got, want := dnsSubdomain(s), subdomain.MatchString(s); got != want {
			t.Errorf("dnsSubdomain(%q) = %v, want %v", s, got, want)
		}
	}
}
