package httpapi_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

// busy is two replicas, the worst at CPU 0.6 with its WAL throttled (0.5):
// resource dominates, raw = 0.6 x 2 = 1.2. Its storage puts 900 of 1000
// budgeted bytes on acct-a (capacity-bound) and nothing on acct-b, so a
// rebalance is recommended.
func busy() *registrytest.Script {
	return registrytest.Returning(pressure.Observation{
		Replicas: []pressure.ReplicaObservation{
			{Name: "a", CPUUtilisation: 0.6, WalSaturation: pressure.Throttled},
			{Name: "b", CPUUtilisation: 0.2},
		},
		Trees: []pressure.TreeObservation{
			{Tree: "t1", RetainedBytes: 900, RetainedBytesCeiling: 1000, PartitionAccounts: []string{"acct-a"}},
			{Tree: "t2", RetainedBytes: 0, RetainedBytesCeiling: 1000, PartitionAccounts: []string{"acct-b"}},
		},
	})
}

// replicas is n replicas at the given CPU, WAL healthy.
func replicas(cpu float64, wal pressure.WalSaturationState) *registrytest.Script {
	return registrytest.Returning(pressure.Observation{Replicas: []pressure.ReplicaObservation{
		{Name: "a", CPUUtilisation: cpu, WalSaturation: wal},
	}})
}

func failing() *registrytest.Script { return registrytest.Failing(errScripted{}) }

type errScripted struct{}

func (errScripted) Error() string { return "scripted source down" }

// The body has the signal's original fields in their order, at every level,
// then stale and target (docs/semantics.md, "HTTP shape of /scale").
func TestScaleKeepsTheOriginalFieldOrder(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{"busy": busy()})
	tg := f.use(t, registry.Ref{}, script("busy"))

	r := f.get(t, "/scale")
	if r.code != http.StatusOK {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	body := json.RawMessage(r.body)
	storage := field(t, body, "storage")
	var accounts []json.RawMessage
	if err := json.Unmarshal(field(t, storage, "accounts"), &accounts); err != nil || len(accounts) != 2 {
		t.Fatalf("accounts = %s (%v), want two", field(t, storage, "accounts"), err)
	}
	for _, c := range []struct {
		what string
		obj  json.RawMessage
		want []string
	}{
		{"top level", body, []string{"scaleValue", "recommendedReplicas", "compute", "storage", "reason", "sampledAt", "rawScaleValue", "stale", "target", "policy", "action", "cost", "dataAgeSeconds", "forecast", "forecastHistoryPending"}},
		{"cost", field(t, body, "cost"), []string{"replicaSeconds", "cost"}},
		{"compute", field(t, body, "compute"), []string{"activation", "resource", "walDispatch", "walSaturation"}},
		{"storage", storage, []string{"overThreshold", "walRetainedBytes", "accounts", "recommendation"}},
		{"account", accounts[0], []string{"providerKey", "walRetainedBytes", "saturation", "classification", "overThreshold"}},
		{"recommendation", field(t, storage, "recommendation"), []string{"tree", "partition", "currentProviderKey", "targetProviderKey", "rationale", "hasHeadroom", "classification"}},
	} {
		if got := keys(t, c.obj); !slices.Equal(got, c.want) {
			t.Errorf("%s keys\n got %v\nwant %v", c.what, got, c.want)
		}
	}

	type view struct {
		ScaleValue          float64 `json:"scaleValue"`
		RecommendedReplicas int     `json:"recommendedReplicas"`
		Compute             struct {
			Resource      float64 `json:"resource"`
			WalDispatch   float64 `json:"walDispatch"`
			WalSaturation string  `json:"walSaturation"`
		} `json:"compute"`
		Storage struct {
			Accounts []struct {
				ProviderKey    string `json:"providerKey"`
				Classification string `json:"classification"`
				OverThreshold  bool   `json:"overThreshold"`
			} `json:"accounts"`
			Recommendation struct {
				Tree               string `json:"tree"`
				CurrentProviderKey string `json:"currentProviderKey"`
				TargetProviderKey  string `json:"targetProviderKey"`
				Classification     string `json:"classification"`
			} `json:"recommendation"`
		} `json:"storage"`
		Reason        string  `json:"reason"`
		SampledAt     string  `json:"sampledAt"`
		RawScaleValue float64 `json:"rawScaleValue"`
		Stale         bool    `json:"stale"`
		Target        string  `json:"target"`
	}
	v := decode[view](t, r)
	if v.ScaleValue != 1.2 || v.RawScaleValue != 1.2 || v.RecommendedReplicas != 2 {
		t.Errorf("scale %v raw %v replicas %d, want 1.2, 1.2, 2", v.ScaleValue, v.RawScaleValue, v.RecommendedReplicas)
	}
	if v.Compute.Resource != 0.6 || v.Compute.WalDispatch != 0.5 || v.Compute.WalSaturation != "Throttled" {
		t.Errorf("compute %+v", v.Compute)
	}
	if a := v.Storage.Accounts[0]; a.ProviderKey != "acct-a" || a.Classification != "CapacityBound" || !a.OverThreshold {
		t.Errorf("first account %+v, want acct-a, CapacityBound, over threshold", a)
	}
	if rec := v.Storage.Recommendation; rec.Tree != "t1" || rec.CurrentProviderKey != "acct-a" || rec.TargetProviderKey != "acct-b" || rec.Classification != "CapacityBound" {
		t.Errorf("recommendation %+v", rec)
	}
	if !strings.HasPrefix(v.Reason, "resource pressure 0.60 across 2 replica") {
		t.Errorf("reason %q", v.Reason)
	}
	if v.SampledAt != "2025-06-01T12:00:00.123456789Z" {
		t.Errorf("sampledAt %q, want RFC 3339 with nanoseconds", v.SampledAt)
	}
	if v.Stale || v.Target != tg.Key {
		t.Errorf("stale %v target %q, want false and %q", v.Stale, v.Target, tg.Key)
	}
}

// A signal that is not current is a 503, so KEDA's metrics-api trigger
// counts a failure (and its fallback can fire) instead of reading a stale
// number as current; the body still carries the last signal, flagged.
func TestScaleRefusesStaleSignalsWith503(t *testing.T) {
	type view struct {
		ScaleValue  float64          `json:"scaleValue"`
		Reason      string           `json:"reason"`
		SampledAt   *json.RawMessage `json:"sampledAt"`
		Stale       bool             `json:"stale"`
		StaleReason string           `json:"staleReason"`
	}

	t.Run("warming up", func(t *testing.T) {
		f := newFixture(t, map[string]*registrytest.Script{"down": failing()})
		f.use(t, registry.Ref{}, script("down"))
		r := f.get(t, "/scale")
		if r.code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503: %s", r.code, r.body)
		}
		if got := string(field(t, r.body, "sampledAt")); got != "null" {
			t.Errorf("sampledAt %s, want null", got)
		}
		v := decode[view](t, r)
		if !v.Stale || v.Reason != "warming up" || !strings.Contains(v.StaleReason, "warming up") {
			t.Errorf("body %+v, want stale, warming up", v)
		}
		if ra := r.header.Get("Retry-After"); ra != "5" {
			t.Errorf("Retry-After %q, want one interval (5)", ra)
		}
	})

	t.Run("stale", func(t *testing.T) {
		f := newFixture(t, map[string]*registrytest.Script{"busy": busy()})
		f.use(t, registry.Ref{}, script("busy"))
		f.clock.Advance(3 * interval) // exactly 3 x the interval is still fresh
		if r := f.get(t, "/scale"); r.code != http.StatusOK {
			t.Fatalf("at 3 x interval: status %d, want 200", r.code)
		}
		f.clock.Advance(time.Millisecond)
		r := f.get(t, "/scale")
		if r.code != http.StatusServiceUnavailable {
			t.Fatalf("past 3 x interval: status %d, want 503: %s", r.code, r.body)
		}
		v := decode[view](t, r)
		if !v.Stale || v.ScaleValue != 1.2 || v.SampledAt == nil || !strings.Contains(v.StaleReason, "stale") {
			t.Errorf("body %+v, want the last signal (1.2) flagged stale", v)
		}
		if got := keys(t, r.body); got[len(got)-1] != "staleReason" {
			t.Errorf("staleReason must follow the original fields and stale/target: %v", got)
		}
	})
}

func TestScaleForAScaledObject(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{"busy": busy(), "calm": replicas(0.1, pressure.Healthy)})
	f.use(t, registry.Ref{}, script("busy"))
	calm := f.use(t, registry.Ref{Namespace: "shop", Name: "checkout"}, script("calm"))

	r := f.get(t, "/scale/shop/checkout")
	if r.code != http.StatusOK {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	v := decode[struct {
		ScaleValue float64 `json:"scaleValue"`
		Target     string  `json:"target"`
	}](t, r)
	if v.Target != calm.Key || v.ScaleValue != 0.1 {
		t.Errorf("got target %q value %v, want %q 0.1", v.Target, v.ScaleValue, calm.Key)
	}

	wantError(t, f.get(t, "/scale/shop/cart"), http.StatusNotFound, "shop/cart", "no target serves")
}

func TestScaleWithoutADefaultTargetIs404(t *testing.T) {
	f := newFixture(t, nil)
	wantError(t, f.get(t, "/scale"), http.StatusNotFound, "no default target")
	wantError(t, f.get(t, "/health/signal"), http.StatusNotFound, "no default target")
}

// The host source reads this machine: a fresh start serves a live signal.
func TestScaleServesTheHostSignal(t *testing.T) {
	f := newFixture(t, nil)
	tg := f.use(t, registry.Ref{}, map[string]string{})
	if err := tg.Load().LastErr; err != nil {
		t.Skipf("host source unavailable here: %v", err)
	}
	r := f.get(t, "/scale")
	if r.code != http.StatusOK {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	v := decode[struct {
		Reason string `json:"reason"`
		Target string `json:"target"`
	}](t, r)
	if !strings.Contains(v.Reason, "across 1 replica") || !strings.HasPrefix(v.Target, "host@") {
		t.Errorf("reason %q target %q", v.Reason, v.Target)
	}
}

func TestTargetsListsTheRegistry(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{"busy": busy(), "calm": replicas(0.1, pressure.Healthy)})
	def := f.use(t, registry.Ref{}, script("busy"))
	calm := f.use(t, registry.Ref{Namespace: "shop", Name: "checkout"}, script("calm"))
	f.use(t, registry.Ref{Namespace: "shop", Name: "cart"}, script("calm"))

	r := f.get(t, "/targets")
	if r.code != http.StatusOK {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	got := decode[[]struct {
		Key           string         `json:"key"`
		Source        string         `json:"source"`
		Default       bool           `json:"default"`
		ScaledObjects []registry.Ref `json:"scaledObjects"`
	}](t, r)
	if len(got) != 2 {
		t.Fatalf("%d targets, want 2: %s", len(got), r.body)
	}
	byKey := map[string]int{got[0].Key: 0, got[1].Key: 1}
	d, c := got[byKey[def.Key]], got[byKey[calm.Key]]
	if !d.Default || d.Source != "scripted/busy" || len(d.ScaledObjects) != 0 {
		t.Errorf("default target %+v", d)
	}
	want := []registry.Ref{{Namespace: "shop", Name: "cart"}, {Namespace: "shop", Name: "checkout"}}
	if c.Default || !slices.Equal(c.ScaledObjects, want) {
		t.Errorf("shared target %+v, want both ScaledObjects %v", c, want)
	}
	// Encoded a target at a time, the listing is still the one JSON
	// encoding of the whole list.
	whole, err := json.Marshal(f.reg.List())
	if err != nil {
		t.Fatal(err)
	}
	if string(r.body) != string(whole)+"\n" {
		t.Errorf("body\n%s\nwant\n%s", r.body, whole)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	var m *metrics.Metrics
	f := newFixture(t, map[string]*registrytest.Script{"busy": busy()}, func(c *httpapi.Config) {
		m = metrics.New(c.Registry)
		c.Metrics = m.Handler()
	})
	f.use(t, registry.Ref{}, script("busy"))
	r := f.get(t, "/metrics")
	if r.code != http.StatusOK || !regexp.MustCompile(`(?m)^barometer_scale_value\{.*source="scripted/busy"`).Match(r.body) {
		t.Fatalf("status %d, body without the scale value:\n%s", r.code, r.body)
	}

	bare := newFixture(t, nil)
	wantError(t, bare.get(t, "/metrics"), http.StatusNotFound, "no such endpoint")
}

// /scale/{namespace}/{name} reports the replicas KEDA asks for at that
// ScaledObject's target (ceil(scaleValue / targetPressure)), and /scale at
// the default target's own; docs/semantics.md says so.
func TestRecommendedReplicasAtTheReadersTarget(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{"hot": replicas(0.9, pressure.Healthy)})
	md := script("hot")
	md["targetPressure"] = "0.4"
	f.use(t, registry.Ref{}, md)
	other := script("hot")
	other["targetPressure"] = "0.2"
	f.use(t, registry.Ref{Namespace: "shop", Name: "checkout"}, other)
	type view struct {
		ScaleValue          float64 `json:"scaleValue"`
		RecommendedReplicas int     `json:"recommendedReplicas"`
	}
	def, ref := decode[view](t, f.get(t, "/scale")), decode[view](t, f.get(t, "/scale/shop/checkout"))
	if def.ScaleValue != 0.9 || def.RecommendedReplicas != 3 {
		t.Errorf("/scale: %+v; want 0.9 and ceil(0.9 / 0.4) = 3", def)
	}
	if ref.ScaleValue != 0.9 || ref.RecommendedReplicas != 5 {
		t.Errorf("/scale/shop/checkout: %+v; want 0.9 and KEDA's ceil(0.9 / 0.2) = 5", ref)
	}
}
