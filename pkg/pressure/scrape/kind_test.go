package scrape

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

const scrapeTarget = "http://web-0.web.shop.svc:9100/metrics"

// parseScrapeMD parses scrape metadata, adding source and targets unless
// given.
func parseScrapeMD(t *testing.T, list *allow.List, kv map[string]string) (scrapeSpec, error) {
	t.Helper()
	raw := map[string]string{"source": KindName, "targets": scrapeTarget}
	maps.Copy(raw, kv)
	s := trigger.NewSchema(Kind(list, nil, Kube{}))
	md, err := s.Parse(raw, 5*time.Second)
	if err != nil {
		return scrapeSpec{}, err
	}
	return md.Source.(scrapeSpec), nil
}

func TestScrapeDefaults(t *testing.T) {
	spec, err := parseScrapeMD(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := spec.opts
	if len(o.Targets) != 1 || o.Targets[0].String() != scrapeTarget || o.CPULimitCores != 0 ||
		o.Timeout != DefaultTimeout || o.MaxResponseBytes != DefaultMaxResponseBytes ||
		o.Concurrency != DefaultConcurrency || o.Names != exposition.DefaultNames() || o.Allow == nil {
		t.Errorf("defaults = %+v", o)
	}
}

func TestScrapeKeys(t *testing.T) {
	spec, err := parseScrapeMD(t, nil, map[string]string{
		"targets":       " dns+http://web.shop.svc:9100 , http://web-0.web.shop.svc.cluster.local:9100/m ",
		"cpuLimitCores": "2", "scrapeTimeout": "500ms", "maxResponseBytes": "65536", "scrapeConcurrency": "4",
		"activationMetric": "shop_sessions", "walStateMetric": "shop.wal.state",
	})
	if err != nil {
		t.Fatal(err)
	}
	o := spec.opts
	got := fmt.Sprint(o.Targets[0], " ", o.Targets[1])
	if got != "dns+http://web.shop.svc:9100/metrics http://web-0.web.shop.svc.cluster.local:9100/m" {
		t.Errorf("targets %s", got)
	}
	if o.CPULimitCores != 2 || o.Timeout != 500*time.Millisecond || o.MaxResponseBytes != 65536 || o.Concurrency != 4 ||
		o.Names.Activations != "shop_sessions" || o.Names.WalState != "shop.wal.state" || o.Names.CPUSeconds != exposition.CPUSeconds {
		t.Errorf("parsed %+v", o)
	}
}

func TestScrapeQueueKeys(t *testing.T) {
	keys := map[string]string{}
	want := exposition.DefaultNames()
	for _, o := range want.Overrides() {
		if strings.HasPrefix(o.Key, "queue") {
			keys[o.Key] = "shop_" + o.Key
			*o.Name = "shop_" + o.Key
		}
	}
	if len(keys) != 10 {
		t.Fatalf("%d queue keys, want 10", len(keys))
	}
	spec, err := parseScrapeMD(t, nil, keys)
	if err != nil {
		t.Fatal(err)
	}
	if spec.opts.Names != want {
		t.Errorf("names %+v\nwant %+v", spec.opts.Names, want)
	}
	def, err := parseScrapeMD(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.Key() == spec.Key() {
		t.Error("renamed queue metrics share the default sampler key")
	}
}

// TestScrapeKeyIsCanonical: spelling and order do not split a sampler;
// meaning does.
func TestScrapeKeyIsCanonical(t *testing.T) {
	key := func(kv map[string]string) string {
		t.Helper()
		spec, err := parseScrapeMD(t, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		return spec.Key()
	}
	a := key(map[string]string{"targets": "http://a.ns.svc:1,http://b.ns.svc:1/metrics"})
	b := key(map[string]string{"targets": " HTTP://B.ns.svc:1/metrics , http://a.ns.svc:1/metrics", "scrapeTimeout": "2000ms",
		"activationMetric": exposition.Activations})
	if a != b {
		t.Errorf("same meaning, keys\n%s\n%s", a, b)
	}
	if !strings.HasPrefix(a, "scrape http://a.ns.svc:1/metrics+1 #") || len(a) > 80 {
		t.Errorf("key %q", a)
	}
	for _, kv := range []map[string]string{
		{"targets": "http://a.ns.svc:1"},
		{"targets": "http://a.ns.svc:1,http://b.ns.svc:1", "cpuLimitCores": "1"},
		{"targets": "http://a.ns.svc:1,http://b.ns.svc:1", "cpuMetric": "other_cpu"},
		{"targets": "http://a.ns.svc:1,http://b.ns.svc:1", "scrapeConcurrency": "2"},
	} {
		if key(kv) == a {
			t.Errorf("%v shares the key %s", kv, a)
		}
	}
}

func TestScrapeErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		kv       map[string]string
		key      string
		mentions string
	}{
		{map[string]string{"targets": ""}, "targets", "required"},
		{map[string]string{"targets": " , "}, "targets", "at least one"},
		{map[string]string{"targets": "ftp://a.ns.svc/"}, "targets", "scheme"},
		{map[string]string{"targets": "http://a.ns.svc,http://A.ns.svc/metrics"}, "targets", "once"},
		{map[string]string{"targets": "http://127.0.0.1:9100/metrics"}, "targets", allow.EnvVar},
		{map[string]string{"targets": "dns+http://evil.example:80"}, "targets", "evil.example"},
		{map[string]string{"cpuLimitCores": "-1"}, "cpuLimitCores", ""},
		{map[string]string{"scrapeTimeout": "1ns"}, "scrapeTimeout", ""},
		{map[string]string{"maxResponseBytes": "10"}, "maxResponseBytes", ""},
		{map[string]string{"scrapeConcurrency": "0"}, "scrapeConcurrency", ""},
		{map[string]string{"memoryMetric": "\xff"}, "memoryMetric", "UTF-8"},
		{map[string]string{"memoryMetric": exposition.Activations}, "memoryMetric", "activationMetric"},
		{map[string]string{"scrapeTimout": "1s"}, "scrapeTimout", "unknown key"},
		{map[string]string{"queueBusyMetric": exposition.QueueReady}, "queueBusyMetric", "queueReadyMetric"},
		{map[string]string{"queueRunDurationMetric": "jobs", "queueArrivalsMetric": "jobs_count"}, "queueArrivalsMetric", "_count series"},
	} {
		_, err := parseScrapeMD(t, nil, tc.kv)
		var me *keyschema.MetadataError
		if !errors.As(err, &me) || me.Key != tc.key || !strings.Contains(err.Error(), tc.mentions) {
			t.Errorf("%v: err %v, want a MetadataError on %s mentioning %q", tc.kv, err, tc.key, tc.mentions)
		}
	}
	var urls []string
	for i := range MaxScrapeTargets + 1 {
		urls = append(urls, fmt.Sprintf("http://w-%d.ns.svc/", i))
	}
	if _, err := parseScrapeMD(t, nil, map[string]string{"targets": strings.Join(urls, ",")}); err == nil {
		t.Error("too many targets accepted")
	}
}

// TestScrapeSourceEndToEnd parses loopback targets under an allow-list that
// admits loopback, builds the source and reads two demo replicas.
func TestScrapeSourceEndToEnd(t *testing.T) {
	list, err := allow.Parse("*.svc,127.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, rps := range []float64{30, 60} {
		w := demo.New(demo.Config{})
		w.SetLoad(rps)
		srv := httptest.NewServer(w.Handler())
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	spec, err := parseScrapeMD(t, list, map[string]string{"targets": strings.Join(urls, ",")})
	if err != nil {
		t.Fatal(err)
	}
	src, err := spec.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := src.Observe(context.Background())
	if err != nil || len(obs.Replicas) != 2 {
		t.Fatalf("%v %+v", err, obs)
	}
	// Replicas come back by name (their random ports), not by load.
	hot := max(obs.Replicas[0].WorkingSet, obs.Replicas[1].WorkingSet)
	cool := min(obs.Replicas[0].WorkingSet, obs.Replicas[1].WorkingSet)
	if hot != 0.6*80000 || cool != 0.3*80000 {
		t.Fatalf("working sets %v and %v, want %v and %v", hot, cool, 0.6*80000, 0.3*80000)
	}
	if c, ok := src.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// TestScrapeKubeTargets: a k8s:// target is refused, naming the key and
// why, when the scaler has no Kubernetes access or the trigger no
// namespace; with both it reads its ScaledObject's namespace, which splits
// the sampler by namespace.
func TestScrapeKubeTargets(t *testing.T) {
	md := map[string]string{"source": KindName, "targets": "k8s://web:metrics"}
	_, err := trigger.NewSchema(Kind(nil, nil, Kube{Unavailable: errors.New("no config here")})).ParseIn("shop", md, 5*time.Second)
	var me *keyschema.MetadataError
	if !errors.As(err, &me) || me.Key != "targets" || !strings.Contains(err.Error(), "no config here") {
		t.Fatalf("without Kubernetes: %v", err)
	}
	s := trigger.NewSchema(Kind(nil, nil, Kube{Discovery: noDiscovery{}}))
	if _, err := s.Parse(md, 5*time.Second); !errors.As(err, &me) || !strings.Contains(err.Error(), "namespace") {
		t.Fatalf("default target: %v", err)
	}
	a, err := s.ParseIn("shop", md, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.ParseIn("other", md, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a.Identity() == b.Identity() || a.Source.(scrapeSpec).opts.Namespace != "shop" {
		t.Errorf("identities %s and %s: one Service name in two namespaces must not share a sampler", a.Identity(), b.Identity())
	}
}

type noDiscovery struct{}

func (noDiscovery) Acquire(string) (discovery.Namespace, func()) { return nil, func() {} }

// TestScrapeVictimHints: victimHints is refused, naming the setting, while
// the scaler does not allow hints, and with a target that is not k8s://.
func TestScrapeVictimHints(t *testing.T) {
	md := map[string]string{"source": KindName, "targets": "k8s://web:metrics", "victimHints": "true"}
	off := trigger.NewSchema(Kind(nil, nil, Kube{Discovery: noDiscovery{}}))
	var me *keyschema.MetadataError
	if _, err := off.ParseIn("shop", md, 5*time.Second); !errors.As(err, &me) || me.Key != "victimHints" || !strings.Contains(err.Error(), "BAROMETER_VICTIM_HINTS") {
		t.Fatalf("hints off: %v", err)
	}
	on := trigger.NewSchema(Kind(nil, nil, Kube{Discovery: noDiscovery{}, Hints: true}))
	tr, err := on.ParseIn("shop", md, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ns, ok := tr.VictimHints(); !ok || ns != "shop" {
		t.Errorf("VictimHints() = %q, %v", ns, ok)
	}
	md["targets"] = "k8s://web:metrics,http://web-0.web.shop.svc:9100/metrics"
	if _, err := on.ParseIn("shop", md, 5*time.Second); !errors.As(err, &me) || me.Key != "victimHints" || !strings.Contains(err.Error(), "k8s://") {
		t.Fatalf("mixed targets: %v", err)
	}
}
