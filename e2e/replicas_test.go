package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/barometer-scaler/barometer/e2e/internal/cluster"
)

// The HA scenario (docs/operations.md, "HA: many scaler replicas, one
// answer"): the chart's two scaler replicas serve KEDA for three
// workloads, one per source that reads a pool (otlp, scrape, prometheus),
// while one replica is evicted and then the Deployment is rolled.
const (
	// haPods and haPerPod: every workload runs three pods at 60 req/s each,
	// so every pod reads pressure 0.6 (CPU: memory is 0.49 and the working
	// set 0.48 at that rate, the demo workload's defaults), the pool's
	// value is 1.8 and the HPA asks for ceil(1.8 / 0.7) = 3. Served 1.4 or
	// less (a pool missing a pod), it would ask for 2.
	haPods   = 3
	haPerPod = 60.0
	// haSample is every trigger's sample interval: the chart's default
	// (config.sampleInterval), which the triggers leave in force. At 1 s
	// the CPU rates would move by the scrapes' latency on a busy machine
	// (up to 8 % seen on two shared cores while pods start); at 5 s by a
	// fifth of it. Prometheus scrapes the pods as often.
	haSample = 5 * time.Second
	// haEvery is how often the recording reads every answer.
	haEvery = time.Second
	// haMinRatio is the lowest served/true ratio the scenario accepts.
	haMinRatio = 0.95
)

// haSources are the workloads' sources, one workload each.
var haSources = []string{"otlp", "scrape", "prometheus"}

// haPhase is a span of the scenario.
type haPhase string

const (
	phaseWarmUp       haPhase = "warm-up"
	phaseSteady       haPhase = "steady"
	phaseEviction     haPhase = "eviction"
	phaseAfterEvict   haPhase = "after eviction"
	phaseRollout      haPhase = "rollout"
	phaseAfterRollout haPhase = "after rollout"
)

// restartPhases are the phases the served/true ratio and the HPA's count
// are judged over: from the eviction to the end.
var restartPhases = []haPhase{phaseEviction, phaseAfterEvict, phaseRollout, phaseAfterRollout}

// haAnswer is one answer: a value, or the error instead.
type haAnswer struct {
	Value *float64 `json:"value,omitempty"`
	Error string   `json:"error,omitempty"`
}

func (a haAnswer) ok() bool { return a.Value != nil }

// haTick is one reading of one workload.
type haTick struct {
	T     float64 `json:"t"`
	Phase haPhase `json:"phase"`
	// True is the pool's value as the suite set the load: every ready
	// pod's pressure (its share of the load over the capacity) times the
	// ready pods.
	True float64 `json:"true"`
	// Served is KEDA's external metric, as its metrics adapter serves it
	// to the HPA (one GetMetrics through KEDA's own connection, which
	// round-robins over the headless Service's pods).
	Served haAnswer `json:"served"`
	// Pods are each scaler pod's own GetMetrics answer, called directly.
	Pods map[string]haAnswer `json:"pods"`
	// Ready are the scaler pods ready and not terminating.
	Ready []string `json:"ready"`
	// Desired is the Deployment's spec.replicas.
	Desired int `json:"desired"`
}

// haWorkload is one workload of the scenario and its readings.
type haWorkload struct {
	source   string
	w        *workload
	metadata map[string]string // the trigger's, exactly as KEDA sends it
	metric   string            // the HPA's external metric name, once known
	served   atomic.Pointer[float64]
	evicted  time.Duration // the eviction, on the workload's own recorder's clock

	mu    sync.Mutex
	ticks []haTick
}

func (h *haWorkload) last() (haTick, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ticks) == 0 {
		return haTick{}, false
	}
	return h.ticks[len(h.ticks)-1], true
}

// TestScalerReplicasThroughRestarts: the chart's Deployment (two
// replicas, OTLP receiver and peers on) runs as pods of the suite; three
// workloads at a constant load are read through otlp (pushed to the OTLP
// Service), scrape (k8s://) and prometheus (a real Prometheus scraping the
// pods). Every second the scenario asks each scaler pod directly
// (GetMetrics, KEDA's generated client) and KEDA's metrics adapter. One
// scaler pod is evicted, then the Deployment is rolled (its pod template
// patched, as kubectl rollout restart does). It asserts that ready replicas
// agree within one sample's step on every reading, that KEDA is never
// served less than haMinRatio of the true pool through the restarts, and
// that no HPA scales in. Writes results/replicas.md and replicas.json.
func TestScalerReplicasThroughRestarts(t *testing.T) {
	skipUnlessKube(t, false)
	t.Parallel()
	ctx := t.Context()

	token := haPushToken(t)
	installChart(t)
	pods, err := waitScalerPods(ctx, 120*time.Second, "the chart's two scaler pods ready", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scaler pods: %+v", pods)
	otlpSvc, err := env.cluster.Client.CoreV1().Services(namespace).Get(ctx, chartOTLPService, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	push := &pushTarget{endpoint: otlpSvc.Spec.ClusterIP + ":4317", tokenFile: token}
	promURL := startPrometheus(t, "ha-prometheus")

	var hs []*haWorkload
	for _, src := range haSources {
		hs = append(hs, newHAWorkload(t, src, push, promURL))
	}
	rec := startHARecorder(ctx, hs)
	defer rec.stop()
	for _, h := range hs {
		h.w.scaledObject(externalTrigger(anyMap(h.metadata)), nil)
	}
	rec.waitAll(t, 120*time.Second, "every workload served its pool, at 3 replicas, both replicas answering", func(h *haWorkload, k haTick) bool {
		return k.Served.ok() && *k.Served.Value >= haMinRatio*k.True && k.Desired == haPods && len(k.Ready) == 2 && answered(k) == 2
	})

	rec.phase(phaseSteady)
	_ = sleepCtx(ctx, 10*time.Second)

	victim := pods[0].Name
	rec.phase(phaseEviction)
	for _, h := range hs {
		h.evicted = h.w.rec.Mark("evict " + victim)
	}
	evict(t, victim)
	if _, err := waitScalerPods(ctx, 120*time.Second, "a replacement for "+victim+" ready, "+victim+" gone", 2, []string{victim}); err != nil {
		t.Fatal(err)
	}
	rec.phase(phaseAfterEvict)
	_ = sleepCtx(ctx, 5*time.Second)

	before, err := scalerPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var old []string
	for _, p := range before {
		old = append(old, p.Name)
	}
	rec.phase(phaseRollout)
	for _, h := range hs {
		h.w.rec.Mark("rollout restart")
	}
	rolloutRestart(t)
	if _, err := waitScalerPods(ctx, 180*time.Second, "the rollout: two new pods ready, the old ones gone", 2, old); err != nil {
		t.Fatal(err)
	}
	rec.phase(phaseAfterRollout)
	_ = sleepCtx(ctx, 10*time.Second)
	rec.stop()

	results := make([]haResult, len(hs))
	for i, h := range hs {
		results[i] = h.judge(t)
	}
	writeHAResults(t, victim, results, hs)
}

// newHAWorkload starts a workload for one source: its Deployment (three
// pods at haPerPod each) and headless Service, and the trigger's metadata.
func newHAWorkload(t *testing.T, source string, push *pushTarget, promURL string) *haWorkload {
	h := &haWorkload{source: source}
	name := "ha-" + source
	opt := options{kube: true, signal: func(context.Context) float64 {
		if v := h.served.Load(); v != nil {
			return *v
		}
		return math.NaN()
	}}
	md := map[string]string{
		"scalerAddress":  chartScalerAddress,
		"profile":        "responsive",
		"targetPressure": strconv.FormatFloat(targetPressure, 'f', -1, 64),
		"minReplicas":    "1",
	}
	switch source {
	case "otlp":
		// The pods push every second through the OTLP Service, with the
		// pod's name as k8s.pod.name (the downward API), which poolService
		// matches to the Service's ready pods.
		opt.otlp, opt.push = true, push
		opt.env = []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "OTEL_RESOURCE_ATTRIBUTES", Value: "k8s.pod.name=$(POD_NAME)"},
		}
		md["source"], md["resourceSelector"], md["poolService"] = "otlp", "k8s.deployment.name="+name, name
		md["maxAge"], md["window"] = "5s", "3s"
	case "scrape":
		md["source"] = "scrape"
	case "prometheus":
		md["source"], md["serverAddress"], md["selector"] = "prometheus", promURL, `job="`+name+`"`
	}
	h.w = newWorkload(t, name, haPods, 1, 10, nil, "HA, source "+source+": a scaler pod evicted, then the Deployment rolled", opt)
	if source == "scrape" {
		md["targets"] = h.w.targets()
	}
	h.metadata = md
	h.w.setLoad(haPerPod * haPods)
	return h
}

// haPushToken makes the OTLP credentials Secret the chart mounts (one
// token, for the suite's namespace) and returns the token's file, which
// the otlp workload's pods push with.
func haPushToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := "ha-" + hex.EncodeToString(b)
	path := filepath.Join(workDir, "ha-push.token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: chartOTLPCredentials, Namespace: namespace},
		StringData: map[string]string{
			"credentials.yaml": "credentials: [{name: e2e-ha, token_file: push.token, namespaces: [" + namespace + "]}]\n",
			"push.token":       token + "\n",
		},
	}
	secrets := env.cluster.Client.CoreV1().Secrets(namespace)
	if _, err := secrets.Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = secrets.Delete(context.Background(), chartOTLPCredentials, metav1.DeleteOptions{}) })
	return path
}

// evict deletes a scaler pod through the Eviction API, as a node drain
// does: the chart's PodDisruptionBudget must allow it, and while it does
// not (the other replica not ready), the eviction is retried.
func evict(t *testing.T, pod string) {
	t.Helper()
	err := cluster.Poll(t.Context(), 60*time.Second, "evict "+pod, func(ctx context.Context) error {
		err := env.cluster.Client.CoreV1().Pods(namespace).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: namespace}})
		if apierrors.IsTooManyRequests(err) {
			return fmt.Errorf("refused by the PodDisruptionBudget: %v", err)
		}
		if err != nil {
			return cluster.Permanent(err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rolloutRestart patches the Deployment's pod template as `kubectl
// rollout restart` does.
func rolloutRestart(t *testing.T) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339))
	if _, err := env.cluster.Client.AppsV1().Deployments(namespace).Patch(t.Context(), chartRelease, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// answered counts the ready scaler pods that answered a value.
func answered(k haTick) int {
	n := 0
	for _, p := range k.Ready {
		if k.Pods[p].ok() {
			n++
		}
	}
	return n
}

// haRecorder reads every workload's answers every haEvery.
type haRecorder struct {
	hs     []*haWorkload
	start  time.Time
	cur    atomic.Pointer[haPhase]
	cancel context.CancelFunc
	done   chan struct{}
	conns  map[string]*grpc.ClientConn // by pod address
}

func startHARecorder(ctx context.Context, hs []*haWorkload) *haRecorder {
	ctx, cancel := context.WithCancel(ctx)
	r := &haRecorder{hs: hs, start: time.Now(), cancel: cancel, done: make(chan struct{}), conns: map[string]*grpc.ClientConn{}}
	r.phase(phaseWarmUp)
	go r.loop(ctx)
	return r
}

func (r *haRecorder) phase(p haPhase) { r.cur.Store(&p) }

func (r *haRecorder) stop() {
	r.cancel()
	<-r.done
	for _, c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

func (r *haRecorder) loop(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(haEvery)
	defer tick.Stop()
	for {
		r.read(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// read takes one reading of every workload: each scaler pod's answer, the
// adapter's, the true value and the Deployment's count, at about the same
// instant.
func (r *haRecorder) read(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	pods, err := scalerPods(ctx)
	if err != nil {
		return
	}
	var ready []string
	for _, p := range pods {
		if p.Ready && !p.Terminating {
			ready = append(ready, p.Name)
		}
		if r.conns[p.IP] == nil {
			if c, err := grpc.NewClient(p.IP+":6000", grpc.WithTransportCredentials(insecure.NewCredentials())); err == nil {
				r.conns[p.IP] = c
			}
		}
	}
	t, phase := time.Since(r.start).Seconds(), *r.cur.Load()
	var wg sync.WaitGroup
	for _, h := range r.hs {
		wg.Go(func() {
			k := haTick{T: t, Phase: phase, Ready: ready, Pods: map[string]haAnswer{}}
			var mu sync.Mutex
			var pw sync.WaitGroup
			for _, p := range pods {
				// What KEDA can reach: the ready pods (the hosts file's),
				// and the terminating ones it may still hold a connection
				// to. A pod not ready yet is left alone, so that the
				// scenario's own calls never make its targets before
				// KEDA's calls could.
				if !p.Ready && !p.Terminating {
					continue
				}
				pw.Go(func() {
					a := getMetrics(ctx, r.conns[p.IP], h)
					mu.Lock()
					k.Pods[p.Name] = a
					mu.Unlock()
				})
			}
			pw.Go(func() { k.Served = h.adapterValue(ctx) })
			pw.Wait()
			k.True = haTrue(h.w.name)
			if p, ok := h.w.rec.Last(); ok {
				k.Desired = p.Desired
			}
			if k.Served.ok() {
				h.served.Store(k.Served.Value)
			}
			h.mu.Lock()
			h.ticks = append(h.ticks, k)
			h.mu.Unlock()
		})
	}
	wg.Wait()
}

// waitAll waits until the latest reading of every workload satisfies ok.
func (r *haRecorder) waitAll(t *testing.T, timeout time.Duration, what string, ok func(*haWorkload, haTick) bool) {
	t.Helper()
	err := cluster.Poll(t.Context(), timeout, what, func(context.Context) error {
		for _, h := range r.hs {
			k, have := h.last()
			if !have || !ok(h, k) {
				return fmt.Errorf("%s: %s", h.source, k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (k haTick) String() string {
	b, _ := json.Marshal(k)
	return string(b)
}

// getMetrics asks one scaler pod for the workload's value, as KEDA asks.
func getMetrics(ctx context.Context, c *grpc.ClientConn, h *haWorkload) haAnswer {
	if c == nil {
		return haAnswer{Error: "no connection"}
	}
	resp, err := externalscaler.NewExternalScalerClient(c).GetMetrics(ctx, &externalscaler.GetMetricsRequest{
		ScaledObjectRef: &externalscaler.ScaledObjectRef{Name: h.w.name, Namespace: namespace, ScalerMetadata: h.metadata},
	})
	if err != nil {
		return haAnswer{Error: status.Code(err).String() + ": " + status.Convert(err).Message()}
	}
	if len(resp.MetricValues) == 0 {
		return haAnswer{Error: "no metric value"}
	}
	m := resp.MetricValues[0]
	v := float64(m.MetricValue)
	if m.MetricValueFloat > 0 {
		v = m.MetricValueFloat
	}
	return haAnswer{Value: &v}
}

// adapterValue is KEDA's external metric for the workload, as its metrics
// adapter serves the HPA.
func (h *haWorkload) adapterValue(ctx context.Context) haAnswer {
	c := env.cluster.Client
	if h.metric == "" {
		hpa, err := c.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, "keda-hpa-"+h.w.name, metav1.GetOptions{})
		if err != nil || len(hpa.Spec.Metrics) == 0 || hpa.Spec.Metrics[0].External == nil {
			return haAnswer{Error: "no HPA yet"}
		}
		h.metric = hpa.Spec.Metrics[0].External.Metric.Name
	}
	body, err := c.Discovery().RESTClient().Get().
		AbsPath("/apis/external.metrics.k8s.io/v1beta1/namespaces/"+namespace+"/"+h.metric).
		Param("labelSelector", "scaledobject.keda.sh/name="+h.w.name).DoRaw(ctx)
	if err != nil {
		return haAnswer{Error: err.Error()}
	}
	var list struct {
		Items []struct {
			Value resource.Quantity `json:"value"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Items) == 0 {
		return haAnswer{Error: fmt.Sprintf("external metric: %v: %s", err, body)}
	}
	v := list.Items[0].Value.AsApproximateFloat64()
	return haAnswer{Value: &v}
}

// haTrue is the pool's value as the suite set it: the workload's load is
// spread evenly over its ready pods, each pod's pressure is its share over
// the demo workload's capacity (CPU, its dominant dimension at this load),
// and the pool's value is that pressure times the ready pods.
func haTrue(app string) float64 {
	n := len(env.runner.Ready(namespace, app))
	if n == 0 {
		return 0
	}
	return min(env.runner.Load(namespace, app)/float64(n)/capacity, 1) * float64(n)
}

// haResult is one workload's figures.
type haResult struct {
	Source string `json:"source"`
	// Readings is how many readings were taken; Compared how many of
	// them had two or more ready replicas that answered, and Disagreed
	// how many of those differed by more than one sample's step.
	Readings  int `json:"readings"`
	Compared  int `json:"compared"`
	Disagreed int `json:"disagreed"`
	// MaxDifference is the largest difference between two ready
	// replicas' answers in one reading.
	MaxDifference float64 `json:"maxDifference"`
	// ReadyErrors are errors a ready replica answered after the warm-up.
	ReadyErrors int `json:"readyErrors"`
	// Over the eviction and the rollout: the lowest served/true ratio,
	// the lowest answer of a ready replica over the true value, how many
	// adapter readings served a value and how many failed, the HPA's
	// lowest and highest count.
	LowestServedRatio float64 `json:"lowestServedRatio"`
	LowestPodRatio    float64 `json:"lowestReadyReplicaRatio"`
	Served            int     `json:"servedReadings"`
	ServedErrors      int     `json:"servedErrors"`
	MinReplicas       int     `json:"minReplicas"`
	MaxReplicas       int     `json:"maxReplicas"`
	// Notes name the first disagreements and failures, for the report.
	Notes []string `json:"notes,omitempty"`
}

// judge computes a workload's figures and fails the test where they break
// the scenario's claims.
func (h *haWorkload) judge(t *testing.T) haResult {
	h.mu.Lock()
	ticks := slices.Clone(h.ticks)
	h.mu.Unlock()
	res := haResult{Source: h.source, Readings: len(ticks), LowestServedRatio: math.Inf(1), LowestPodRatio: math.Inf(1), MinReplicas: math.MaxInt}
	note := func(format string, args ...any) {
		if len(res.Notes) < 10 {
			res.Notes = append(res.Notes, fmt.Sprintf(format, args...))
		}
	}
	for i, k := range ticks {
		if k.Phase == phaseWarmUp {
			continue
		}
		var vals []float64
		var names []string
		for _, p := range k.Ready {
			a := k.Pods[p]
			if !a.ok() {
				res.ReadyErrors++
				note("t=%.0fs %s: ready replica %s answered %s", k.T, k.Phase, p, a.Error)
				continue
			}
			vals, names = append(vals, *a.Value), append(names, p)
		}
		if len(vals) >= 2 {
			res.Compared++
			res.MaxDifference = max(res.MaxDifference, slices.Max(vals)-slices.Min(vals))
			for a := range names {
				for b := a + 1; b < len(names); b++ {
					if !agree(ticks, i, names[a], names[b]) || !agree(ticks, i, names[b], names[a]) {
						res.Disagreed++
						note("t=%.0fs %s: replicas %v answered %v", k.T, k.Phase, names, vals)
					}
				}
			}
		}
		if !slices.Contains(restartPhases, k.Phase) {
			continue
		}
		if k.True <= 0 {
			continue // no ready pod of the workload: nothing to serve
		}
		if k.Served.ok() {
			res.Served++
			res.LowestServedRatio = min(res.LowestServedRatio, *k.Served.Value/k.True)
		} else {
			res.ServedErrors++
			note("t=%.0fs %s: KEDA's adapter: %s", k.T, k.Phase, k.Served.Error)
		}
		for _, v := range vals {
			res.LowestPodRatio = min(res.LowestPodRatio, v/k.True)
		}
	}
	// From the eviction on, on the workload recorder's clock (the HA
	// recorder's ticks count from a later start).
	for _, p := range h.w.rec.Snapshot().Points {
		if h.evicted > 0 && p.T >= h.evicted {
			res.MinReplicas, res.MaxReplicas = min(res.MinReplicas, p.Desired), max(res.MaxReplicas, p.Desired)
		}
	}
	// JSON has no infinity: a figure never measured reads 0, and the
	// assertions below say why.
	for _, f := range []*float64{&res.LowestServedRatio, &res.LowestPodRatio} {
		if math.IsInf(*f, 0) {
			*f = 0
		}
	}
	if res.MinReplicas == math.MaxInt {
		res.MinReplicas = 0
	}
	t.Logf("%s: %d readings, %d compared, %d disagreed (max difference %.4g), %d errors from ready replicas; through the restarts: lowest served/true %.3f over %d served (%d failed), lowest ready-replica answer/true %.3f, replicas %d..%d",
		h.source, res.Readings, res.Compared, res.Disagreed, res.MaxDifference, res.ReadyErrors, res.LowestServedRatio, res.Served, res.ServedErrors, res.LowestPodRatio, res.MinReplicas, res.MaxReplicas)
	if res.Disagreed > 0 {
		t.Errorf("%s: the ready replicas disagreed by more than one sample's step in %d of %d readings: %s", h.source, res.Disagreed, res.Compared, strings.Join(res.Notes, "; "))
	}
	if res.Served == 0 {
		t.Errorf("%s: KEDA's adapter served no value through the restarts", h.source)
	} else if res.LowestServedRatio < haMinRatio {
		t.Errorf("%s: KEDA was served %.3f of the true pool's value, below %.2f", h.source, res.LowestServedRatio, haMinRatio)
	}
	if res.MinReplicas < haPods {
		t.Errorf("%s: the HPA scaled in to %d during the restarts (the load asks for %d)", h.source, res.MinReplicas, haPods)
	}
	return res
}

// agree: pod a's answer at reading i is one pod b gave within one sample
// interval of it (two replicas sample the same aligned instants, and a
// read can fall between one replica's sample and the other's, or catch a
// new replica's first), to within agreeTolerance.
func agree(ticks []haTick, i int, a, b string) bool {
	v := *ticks[i].Pods[a].Value
	within := int(haSample / haEvery)
	for j := max(i-within, 0); j <= min(i+within, len(ticks)-1); j++ {
		if w := ticks[j].Pods[b]; w.ok() && math.Abs(v-*w.Value) <= agreeTolerance*math.Max(math.Abs(v), math.Abs(*w.Value)) {
			return true
		}
	}
	return false
}

// agreeTolerance bounds the difference between two replicas' readings of
// one pool. Each replica measures the CPU rates itself (its own scrapes,
// its own evaluation of what was pushed or of what Prometheus holds), and a
// rate moves with the latency of the reads it is taken from: on the whole
// suite's two busy cores a starved read puts a pod up to 10 % hot (seen,
// scrape, at the 5 s interval). The pressure is the busiest pod's, and the
// responsive profile publishes a rise at once and may hold a fall within
// its margins, so the replica that read such a peak holds it. A pod
// missing from the pool of three is 33 %, a pod read without its CPU 18 %:
// both far outside.
const agreeTolerance = 0.12

// writeHAResults writes replicas.md and replicas.json into the results
// directory, and each workload's readings beside them.
func writeHAResults(t *testing.T, victim string, results []haResult, hs []*haWorkload) {
	var b strings.Builder
	b.WriteString("# Two scaler replicas through an eviction and a rollout\n\n")
	fmt.Fprintf(&b, "The chart's Deployment (two replicas, OTLP receiver and peers on) serves KEDA for three workloads of %d pods at %g req/s each (the pool's value %.1f; the HPA asks for %d). "+
		"Each second the scenario asks each scaler pod (GetMetrics) and KEDA's metrics adapter. %s was evicted, then the Deployment rolled.\n\n",
		haPods, haPerPod, haPerPod*haPods/capacity, haPods, victim)
	b.WriteString("| source | readings | compared (both ready) | disagreed | max difference | ready-replica errors | lowest served/true | served (failed) | lowest replica answer/true | HPA replicas |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.4g | %d | %.3f | %d (%d) | %.3f | %d..%d |\n", r.Source, r.Readings, r.Compared, r.Disagreed, r.MaxDifference,
			r.ReadyErrors, r.LowestServedRatio, r.Served, r.ServedErrors, r.LowestPodRatio, r.MinReplicas, r.MaxReplicas)
	}
	for _, r := range results {
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "\n- %s: %s", r.Source, n)
		}
	}
	b.WriteString("\n")
	fmt.Print("\n=== e2e: scaler replicas through restarts\n" + b.String())
	_ = os.MkdirAll(resultsDir, 0o755)
	if err := os.WriteFile(filepath.Join(resultsDir, "replicas.md"), []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
	readings := map[string][]haTick{}
	for _, h := range hs {
		h.mu.Lock()
		readings[h.source] = slices.Clone(h.ticks)
		h.mu.Unlock()
	}
	writeJSON(t, "replicas.json", map[string]any{"evicted": victim, "results": results, "readings": readings})
}
