package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/barometer-scaler/barometer/e2e/internal/cluster"
	"github.com/barometer-scaler/barometer/e2e/internal/podrunner"
	"github.com/barometer-scaler/barometer/e2e/internal/record"
)

var (
	scaledObjectGVR = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
	triggerAuthGVR  = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "triggerauthentications"}
)

// The demo workload's model (examples/demo-workload, its defaults): one
// replica serves capacity requests per second at full CPU, and below 70 % of
// that CPU is its dominant dimension. So with targetPressure 0.7 the load
// needs ceil(load / (capacity x 0.7)) replicas.
const (
	capacity       = 100.0
	targetPressure = 0.7
)

// recordEvery is how often a workload's recorder reads the Deployment: the
// resolution of every time the suite measures.
const recordEvery = 500 * time.Millisecond

// hpaSyncPeriod is the HPA controller's sync period in the suite's
// cluster: a replica count changes only at one of its syncs.
const hpaSyncPeriod = 5 * time.Second

// demandOf is the replicas a total load needs when one replica should
// carry perReplica of it, clamped to [lo, hi].
func demandOf(load, perReplica float64, lo, hi int) int {
	n := int(math.Ceil(load/perReplica - 1e-9))
	return min(max(n, lo), hi)
}

// workload is one scenario's Deployment of the demo workload, its
// ScaledObject and its recording.
type workload struct {
	t        *testing.T
	ctx      context.Context
	name     string
	min, max int
	rec      *record.Recorder
	scaler   *scaler
	// perReplica is the load one replica should carry: the demand is
	// load / perReplica.
	perReplica float64
	// demandLoad, when set, is the load that demand follows instead of the
	// pods' (the push scenario's front end).
	demandLoad func() float64
	// demand, when not zero, is the demand the recording shows instead of
	// load / perReplica: a scenario that loads one pod only knows it.
	demand atomic.Int32
	// kube: the workload has a Service (with a selector, so the
	// EndpointSlice controller keeps its slices) and its target is k8s://.
	kube bool
	// otlp: the pods push their contract to the scaler's OTLP receiver,
	// and the trigger reads it with the otlp source.
	otlp bool
}

// options shape a workload.
type options struct {
	// args are the demo workload's extra flags (the container's args).
	args []string
	// perReplica overrides capacity x targetPressure.
	perReplica float64
	// kube gives the workload a Service and a k8s:// target.
	kube bool
	// otlp makes the pods push over OTLP and the trigger read the pushes.
	otlp bool
	// grace is the pods' terminationGracePeriodSeconds (0: deleted at
	// once), preStop their preStop sleep (the pod runner serves through it).
	grace, preStop int64
	// push is where an otlp workload's pods push, instead of the
	// workload's scaler's receiver.
	push *pushTarget
	// env is the container's environment.
	env []corev1.EnvVar
	// signal, when set, is what the recording shows as the signal instead
	// of the scaler's scaleValue.
	signal func(ctx context.Context) float64
}

// pushTarget is an OTLP receiver the pods push to, and the file of the
// token they push with.
type pushTarget struct{ endpoint, tokenFile string }

// newWorkload creates the Deployment at replicas and waits for them to be
// ready, then starts recording. Cleanup removes everything and writes the
// recording to the results directory.
func newWorkload(t *testing.T, name string, replicas, lo, hi int, s *scaler, title string, opt ...options) *workload {
	t.Helper()
	ctx := t.Context()
	w := &workload{t: t, ctx: ctx, name: name, min: lo, max: hi, scaler: s, perReplica: capacity * targetPressure}
	var args []string
	var grace int64
	var lifecycle *corev1.Lifecycle
	var envs []corev1.EnvVar
	push := &pushTarget{}
	if s != nil {
		push = &pushTarget{s.otlp, s.otlpToken}
	}
	signal := func(ctx context.Context) float64 { return w.scaler.signal(ctx, name) }
	for _, o := range opt {
		args = append(args, o.args...)
		envs = append(envs, o.env...)
		if o.push != nil {
			push = o.push
		}
		if o.signal != nil {
			signal = o.signal
		}
		if o.perReplica > 0 {
			w.perReplica = o.perReplica
		}
		w.kube = w.kube || o.kube
		w.otlp = w.otlp || o.otlp
		grace = max(grace, o.grace)
		if o.preStop > 0 {
			lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: o.preStop}}}
		}
	}
	if w.otlp {
		// Every second, as the sample interval; the pod is its address
		// (service.instance.id), and the resource names no namespace, so
		// the receiver writes the credential's one namespace.
		args = append(args, "-otlp-endpoint", push.endpoint, "-otlp-token-file", push.tokenFile,
			"-otlp-interval", "1s", "-otlp-attributes", "k8s.deployment.name="+name)
	}
	labels := map[string]string{podrunner.AppLabel: name}
	r := int32(replicas)
	off := false
	if w.kube {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
			Spec: corev1.ServiceSpec{
				Selector:  maps.Clone(labels),
				ClusterIP: corev1.ClusterIPNone,
				Ports: []corev1.ServicePort{{
					Name: "metrics", Port: int32(env.podPort), TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP,
				}},
			},
		}
		if _, err := env.cluster.Client.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create service: %v", err)
		}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &r,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					NodeName:                      nodeName,
					AutomountServiceAccountToken:  &off,
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "demo", Image: "barometer/demo-workload:e2e", Args: args, Env: envs, Lifecycle: lifecycle,
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: int32(env.podPort)}},
					}},
				},
			},
		},
	}
	if _, err := env.cluster.Client.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	t.Cleanup(func() { w.cleanup(title) })
	if err := cluster.Poll(ctx, 90*time.Second, fmt.Sprintf("%s: %d ready replicas", name, replicas), func(ctx context.Context) error {
		d, err := env.cluster.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if int(d.Status.ReadyReplicas) != replicas || int(d.Status.Replicas) != replicas {
			return fmt.Errorf("ready %d of %d", d.Status.ReadyReplicas, d.Status.Replicas)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The recording outlives the test's context (cancelled before
	// cleanups run): cleanup stops it and writes it.
	w.rec = record.Start(context.Background(), env.cluster.Client, namespace, name, recordEvery, record.Probe{
		Load: func() (float64, int) {
			load := env.runner.Load(namespace, name)
			if w.demandLoad != nil {
				load = w.demandLoad()
			}
			if d := w.demand.Load(); d > 0 {
				return load, int(d)
			}
			return load, demandOf(load, w.perReplica, w.min, w.max)
		},
		Signal: signal,
	})
	return w
}

// setLoad sets the total load and marks the change; it returns the mark.
func (w *workload) setLoad(rps float64) time.Duration {
	w.t.Helper()
	at := w.rec.Mark(fmt.Sprintf("load %g", rps))
	if err := env.runner.SetLoad(namespace, w.name, rps); err != nil {
		w.t.Fatalf("set load: %v", err)
	}
	return at
}

func (w *workload) setSplits(n float64) time.Duration {
	w.t.Helper()
	at := w.rec.Mark(fmt.Sprintf("splits %g", n))
	if err := env.runner.SetSplits(namespace, w.name, n); err != nil {
		w.t.Fatalf("set splits: %v", err)
	}
	return at
}

// waitFor waits for a point after since that satisfies ok.
func (w *workload) waitFor(since, timeout time.Duration, what string, ok func(record.Point) bool) record.Point {
	w.t.Helper()
	p, err := w.rec.WaitFor(w.ctx, since, timeout, w.name+": "+what, ok)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// hold fails unless ok holds for every point over d.
func (w *workload) hold(d time.Duration, what string, ok func(record.Point) bool) {
	w.t.Helper()
	if err := w.rec.Hold(w.ctx, d, w.name+": "+what, ok); err != nil {
		w.t.Fatal(err)
	}
}

// pressureMetadata returns the external trigger metadata for this
// workload: the scrape source over the pods' headless-Service name. It
// names profile original: the scenarios built on it assert the gated,
// smoothed scale-in and the 0.25 scale-in thresholds, which the default
// profile (budgeted) and responsive do not have (pkg/signal/profile.go).
func (w *workload) pressureMetadata(extra map[string]string) map[string]any {
	m := map[string]any{
		"scalerAddress":     w.scaler.grpc,
		"profile":           "original",
		"targetPressure":    strconv.FormatFloat(targetPressure, 'f', -1, 64),
		"minReplicas":       strconv.Itoa(w.min),
		"sampleInterval":    "1s",
		"ewmaHalfLife":      "3s",
		"scaleInGateWindow": gateWindow.String(),
	}
	maps.Copy(m, w.sourceMetadata())
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// sourceMetadata is the trigger's source: the scrape of the pods, or for
// an otlp workload what they push. maxAge is a few export intervals, so a
// deleted pod's last push leaves the sample within seconds; the window of
// the CPU counter's rate is a few pushes (the store keeps a point at least
// every 2 s), so the rate follows the load nearly as a scrape's does.
func (w *workload) sourceMetadata() map[string]any {
	if w.otlp {
		return map[string]any{"source": "otlp", "resourceSelector": "k8s.deployment.name=" + w.name, "maxAge": "5s", "window": "3s"}
	}
	return map[string]any{"source": "scrape", "targets": w.targets()}
}

// targets is the scrape target of the workload's pods: its headless
// Service name, expanded to the ready pods (the pod runner's hosts file);
// or for a kube workload its Service's EndpointSlices.
func (w *workload) targets() string {
	if w.kube {
		return "k8s://" + w.name + ":" + strconv.Itoa(env.podPort) + "/metrics"
	}
	return "dns+http://" + podrunner.ServiceName(namespace, w.name) + ":" + strconv.Itoa(env.podPort) + "/metrics"
}

// gateWindow is the scale-in gate window every scenario configures.
const gateWindow = 10 * time.Second

// scaledObject is a ScaledObject for the workload with fast loops: KEDA
// polls every 5 s, the HPA syncs every 5 s, and no HPA stabilization, so
// what the test sees is Barometer's own timing (its gate and smoothing).
func (w *workload) scaledObject(trigger map[string]any, spec map[string]any) {
	w.t.Helper()
	s := map[string]any{
		"scaleTargetRef":  map[string]any{"name": w.name},
		"pollingInterval": int64(5),
		"cooldownPeriod":  int64(30),
		"minReplicaCount": int64(w.min),
		"maxReplicaCount": int64(w.max),
		"advanced": map[string]any{
			"horizontalPodAutoscalerConfig": map[string]any{
				"behavior": map[string]any{
					"scaleUp": map[string]any{
						"stabilizationWindowSeconds": int64(0),
						"selectPolicy":               "Max",
						"policies": []any{
							map[string]any{"type": "Percent", "value": int64(100), "periodSeconds": int64(5)},
							map[string]any{"type": "Pods", "value": int64(4), "periodSeconds": int64(5)},
						},
					},
					"scaleDown": map[string]any{
						"stabilizationWindowSeconds": int64(0),
						"policies": []any{
							map[string]any{"type": "Percent", "value": int64(100), "periodSeconds": int64(5)},
						},
					},
				},
			},
		},
		"triggers": []any{trigger},
	}
	for k, v := range spec {
		s[k] = v
	}
	so := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "keda.sh/v1alpha1",
		"kind":       "ScaledObject",
		"metadata":   map[string]any{"name": w.name, "namespace": namespace},
		"spec":       s,
	}}
	if _, err := env.cluster.Dynamic.Resource(scaledObjectGVR).Namespace(namespace).Create(w.ctx, so, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("create ScaledObject: %v", err)
	}
	w.rec.Mark("ScaledObject")
}

// waitServed waits until KEDA has asked the scaler for this ScaledObject and
// the scaler serves a signal for it.
func (w *workload) waitServed(timeout time.Duration) {
	w.t.Helper()
	w.waitFor(w.rec.Now(), timeout, "the scaler serves a signal (KEDA has called it)", func(p record.Point) bool { return !math.IsNaN(p.Signal) })
}

// cleanup removes the ScaledObject (and the HPA KEDA made, since no garbage
// collector runs), then the pods, the ReplicaSets and the Deployment; and
// writes the recording.
func (w *workload) cleanup(title string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if w.rec != nil {
		run := w.rec.Stop()
		if err := run.Write(resultsDir, w.name, title); err != nil {
			w.t.Errorf("write results: %v", err)
		}
		m := run.Metrics()
		w.t.Logf("SPEC metrics over %.0fs: theta_U %.1f%% theta_O %.1f%% tau_U %.1f%% tau_O %.1f%% upsilon %.1f%% jitter %.2f/min; changes %d, oscillations %d, peak %d",
			m.Seconds, m.UnderAccuracy, m.OverAccuracy, m.UnderTimeshare, m.OverTimeshare, m.Instability, m.Jitter, m.Changes, m.Oscillations, m.Peak)
		w.t.Logf("recording: %s", filepath.Join(resultsDir, w.name+".svg"))
	}
	c := env.cluster
	so := c.Dynamic.Resource(scaledObjectGVR).Namespace(namespace)
	if err := so.Delete(ctx, w.name, metav1.DeleteOptions{}); err == nil {
		// KEDA's finalizer runs first; wait for it so it does not race
		// the HPA removal below.
		_ = cluster.Poll(ctx, 60*time.Second, "ScaledObject gone", func(ctx context.Context) error {
			if _, err := so.Get(ctx, w.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		})
	}
	_ = c.Client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Delete(ctx, "keda-hpa-"+w.name, metav1.DeleteOptions{})
	_ = c.Client.AppsV1().Deployments(namespace).Delete(ctx, w.name, metav1.DeleteOptions{})
	sel := podrunner.AppLabel + "=" + w.name
	_ = c.Client.AppsV1().ReplicaSets(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel})
	zero := int64(0)
	_ = c.Client.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: sel})
	if w.kube {
		// No garbage collector runs: the Service's slices go by hand.
		_ = c.Client.CoreV1().Services(namespace).Delete(ctx, w.name, metav1.DeleteOptions{})
		_ = c.Client.DiscoveryV1().EndpointSlices(namespace).DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + w.name})
	}
	err := cluster.Poll(ctx, 60*time.Second, w.name+": pods gone", func(ctx context.Context) error {
		pods, err := c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err
		}
		if n := len(pods.Items); n > 0 {
			// A ReplicaSet controller sync that began before its
			// ReplicaSet went can still create a pod after the first
			// DeleteCollection: delete again.
			_ = c.Client.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: sel})
			return fmt.Errorf("%d left", n)
		}
		return nil
	})
	if err != nil {
		w.t.Logf("cleanup: %v", err)
	}
}
