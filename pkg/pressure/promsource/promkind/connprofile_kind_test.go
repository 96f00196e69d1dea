package promkind

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// A trigger names a connection profile (or its server matches one); the
// profile's namespaces decide who may use it, and a refusal names the key
// and the profile, never another profile's settings.
func TestConnectionProfileKeys(t *testing.T) {
	set, err := connprofile.Parse([]byte(`profiles:
- name: team-a
  url: http://prometheus.monitoring.svc:9090
  namespaces: [shop]
  timeout: 2s
  tenant: team-a
- name: secret-b
  url: http://thanos.monitoring.svc:9090
  namespaces: [billing]
`), t.TempDir(), connprofile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	schema := trigger.NewSchema(host.Kind(), Kind(nil, set), scrape.Kind(nil, set, scrape.Kube{}))
	parse := func(ns string, kv ...string) (*trigger.Trigger, error) {
		raw := map[string]string{"source": "prometheus"}
		for i := 0; i+1 < len(kv); i += 2 {
			raw[kv[i]] = kv[i+1]
		}
		return schema.ParseIn(ns, raw, 5*time.Second)
	}
	tr, err := parse("shop", "connectionProfile", "team-a", "queryParameters", "dedup=false", "customHeaders", "X-Team=a")
	if err != nil {
		t.Fatal(err)
	}
	spec := tr.Source.(prometheusSpec)
	if spec.server != "http://prometheus.monitoring.svc:9090" || spec.timeout != 2*time.Second || spec.profile.Name() != "team-a" {
		t.Fatalf("resolved: %+v", spec)
	}
	// The key tells the settings apart by a hash, and shows no header's or
	// parameter's value.
	b, err := parse("shop", "connectionProfile", "team-a", "queryParameters", "dedup=false", "customHeaders", "X-Team=b")
	if err != nil {
		t.Fatal(err)
	}
	if key := spec.Key(); key == b.Source.Key() || strings.Contains(key, "X-Team") || strings.Contains(key, "dedup") {
		t.Errorf("keys %q and %q", key, b.Source.Key())
	}
	if other, _ := parse("shop", "serverAddress", "http://prometheus.monitoring.svc:9090"); other == nil || other.Source.(prometheusSpec).profile.Name() != "team-a" {
		t.Error("a server a profile matches does not use it")
	}
	var me *keyschema.MetadataError
	for _, c := range []struct {
		ns   string
		kv   []string
		key  string
		want string
	}{
		{"billing", []string{"connectionProfile", "team-a"}, "connectionProfile", `namespace "billing"`},
		{"shop", []string{"connectionProfile", "nope"}, "connectionProfile", "no connection profile of that name"},
		{"shop", []string{"serverAddress", "http://thanos.monitoring.svc:9090"}, "serverAddress", `namespace "shop"`},
		{"shop", []string{"connectionProfile", "team-a", "queryParameters", "query=up"}, "queryParameters", "query API's own"},
		{"shop", []string{"connectionProfile", "team-a", "customHeaders", "X-Scope-OrgID=team-b"}, "customHeaders", "tenant header"},
		{"shop", []string{"connectionProfile", "team-a", "customHeaders", "Authorization=Bearer x"}, "customHeaders", "credentials"},
		{"shop", nil, "serverAddress", "required"},
	} {
		_, err := parse(c.ns, c.kv...)
		if !errors.As(err, &me) || me.Key != c.key || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "thanos") && c.key != "serverAddress" {
			t.Errorf("%s %v: %v", c.ns, c.kv, err)
		}
	}
}

// By default a ScaledObject's metadata reaches only the Services of its own
// namespace; a wider pattern is the operator's choice.
func TestTenancy(t *testing.T) {
	schema := trigger.NewSchema(host.Kind(), scrape.Kind(nil, nil, scrape.Kube{}), Kind(nil, nil))
	var me *keyschema.MetadataError
	for _, c := range []struct {
		ns, source, key, addr string
		ok                    bool
	}{
		{"shop", "scrape", "targets", "http://web-0.web.shop.svc:9100/metrics", true},
		{"shop", "scrape", "targets", "dns+http://web.shop.svc.cluster.local:9100/metrics", true},
		{"shop", "scrape", "targets", "http://web-0.web.billing.svc:9100/metrics", false},
		{"shop", "prometheus", "serverAddress", "http://prometheus.monitoring.svc:9090", false},
		{"monitoring", "prometheus", "serverAddress", "http://prometheus.monitoring.svc:9090", true},
		{"", "prometheus", "serverAddress", "http://prometheus.monitoring.svc:9090", true}, // the scaler's own default target
	} {
		_, err := schema.ParseIn(c.ns, map[string]string{"source": c.source, c.key: c.addr}, 5*time.Second)
		if c.ok && err != nil || !c.ok && (!errors.As(err, &me) || me.Key != c.key || !strings.Contains(err.Error(), "{namespace}")) {
			t.Errorf("namespace %q %s=%s: %v", c.ns, c.key, c.addr, err)
		}
	}
	wide, err := allow.Parse("*.{namespace}.svc,prometheus.monitoring.svc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trigger.NewSchema(Kind(wide, nil)).ParseIn("shop", map[string]string{"source": "prometheus", "serverAddress": "http://prometheus.monitoring.svc:9090"}, time.Second); err != nil {
		t.Errorf("an operator's wider pattern: %v", err)
	}
}
