package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/barometer-scaler/barometer/e2e/internal/cluster"
	"github.com/barometer-scaler/barometer/e2e/internal/podrunner"
	"github.com/barometer-scaler/barometer/e2e/internal/record"
)

// deletionCost is the annotation the ReplicaSet controller reads to choose
// which pods go first on scale-in (lowest first), and victim hints keep.
const deletionCost = "controller.kubernetes.io/pod-deletion-cost"

// scaleView is the scaler's /scale answer for a ScaledObject: the fields
// the kube scenarios read, and the whole body.
type scaleView struct {
	ScaleValue float64 `json:"scaleValue"`
	// RawScaleValue is the sample's own value (dominant pressure x the
	// replicas sampled), before smoothing and the replica floor.
	RawScaleValue float64 `json:"rawScaleValue"`
	Reason        string  `json:"reason"`
	Raw           string  `json:"-"`
}

func (s *scaler) view(ctx context.Context, name string) (scaleView, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.http+"/scale/"+namespace+"/"+name, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return scaleView{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return scaleView{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return scaleView{}, fmt.Errorf("/scale: %s: %s", resp.Status, body)
	}
	var v scaleView
	if err := json.Unmarshal(body, &v); err != nil {
		return scaleView{}, err
	}
	v.Raw = string(body)
	return v, nil
}

// pods lists the workload's pods in the API: name -> the pod.
func (w *workload) podNames() (live []string, terminating []string) {
	w.t.Helper()
	pods, err := env.cluster.Client.CoreV1().Pods(namespace).List(w.ctx, metav1.ListOptions{LabelSelector: podrunner.AppLabel + "=" + w.name})
	if err != nil {
		w.t.Fatalf("list pods: %v", err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			terminating = append(terminating, p.Name)
		} else {
			live = append(live, p.Name)
		}
	}
	slices.Sort(live)
	slices.Sort(terminating)
	return live, terminating
}

// costs reads each live pod's pod-deletion-cost ("" when it has none).
func (w *workload) costs() map[string]string {
	w.t.Helper()
	pods, err := env.cluster.Client.CoreV1().Pods(namespace).List(w.ctx, metav1.ListOptions{LabelSelector: podrunner.AppLabel + "=" + w.name})
	if err != nil {
		w.t.Fatalf("list pods: %v", err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.Annotations[deletionCost]
		}
	}
	return out
}

// setPodLoads puts load on the named pods only and marks the change.
func (w *workload) setPodLoads(loads map[string]float64) time.Duration {
	w.t.Helper()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(loads)) {
		parts = append(parts, fmt.Sprintf("%s %g", k, loads[k]))
	}
	at := w.rec.Mark("load " + strings.Join(parts, ", ") + ", none elsewhere")
	if err := env.runner.SetPodLoads(namespace, w.name, loads); err != nil {
		w.t.Fatalf("set pod loads: %v", err)
	}
	return at
}

// TestTerminatingPodLeftOut: a pod being deleted gracefully goes on serving
// through its preStop sleep, and the EndpointSlice controller publishes it
// as serving and terminating. A k8s:// target leaves it out of the sample
// and names it in the Reason: the load it alone carries stops counting
// while it still answers.
func TestTerminatingPodLeftOut(t *testing.T) {
	skipUnlessKube(t, false)
	t.Parallel()
	const hold = 25 // seconds of preStop sleep
	w := newWorkload(t, "terminating", 3, 3, 3, env.scaler, "a terminating pod is left out of the sample",
		options{kube: true, grace: 60, preStop: hold})
	live, _ := w.podNames()
	victim := live[0]
	// 60 req/s on the victim alone: pressure 0.6 on one of three replicas.
	w.setPodLoads(map[string]float64{victim: 60})
	w.scaledObject(externalTrigger(w.pressureMetadata(map[string]string{"profile": "responsive"})), nil)
	w.waitServed(60 * time.Second)
	ctx := t.Context()
	var before scaleView
	if err := cluster.Poll(ctx, 30*time.Second, "the signal counts the victim's load", func(ctx context.Context) error {
		v, err := env.scaler.view(ctx, w.name)
		if err != nil {
			return err
		}
		before = v
		// The sample, not scaleValue: with minReplicas 3 the floor
		// (3 x targetPressure, 2.1) is what scaleValue shows either way.
		if v.RawScaleValue < 1.2 {
			return fmt.Errorf("rawScaleValue %.3g (want about 1.8: 0.6 x 3); %s", v.RawScaleValue, v.Raw)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("before: rawScaleValue %.3g scaleValue %.3g reason %q", before.RawScaleValue, before.ScaleValue, before.Reason)

	w.rec.Mark("delete " + victim + " (grace 60s, preStop sleep " + strconv.Itoa(hold) + "s)")
	deleted := time.Now()
	if err := env.cluster.Client.CoreV1().Pods(namespace).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The slice shows it serving and terminating.
	var sliceState string
	if err := cluster.Poll(ctx, 20*time.Second, victim+" serving and terminating in the EndpointSlice", func(ctx context.Context) error {
		slices, err := env.cluster.Client.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + w.name})
		if err != nil {
			return err
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef == nil || e.TargetRef.Name != victim {
					continue
				}
				c := e.Conditions
				sliceState = fmt.Sprintf("addresses %v ready=%v serving=%v terminating=%v", e.Addresses, deref(c.Ready), deref(c.Serving), deref(c.Terminating))
				if deref(c.Serving) && deref(c.Terminating) && !deref(c.Ready) {
					return nil
				}
			}
		}
		return fmt.Errorf("not yet: %s", sliceState)
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("EndpointSlice: %s %s", victim, sliceState)
	var during scaleView
	if err := cluster.Poll(ctx, 20*time.Second, "the Reason names "+victim+" terminating and the signal leaves its load out", func(ctx context.Context) error {
		v, err := env.scaler.view(ctx, w.name)
		if err != nil {
			return err
		}
		during = v
		if !strings.Contains(v.Reason, victim) || !strings.Contains(strings.ToLower(v.Reason), "terminating") {
			return fmt.Errorf("reason %q", v.Reason)
		}
		if v.RawScaleValue > 0.6 {
			return fmt.Errorf("rawScaleValue %.3g: the terminating pod's load still counts; %s", v.RawScaleValue, v.Raw)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	measure(t, "pod deleted: left out of the sample, named terminating", time.Since(deleted))
	// While the scaler leaves it out, the pod still serves: it was left out
	// because it is terminating, not because it stopped answering.
	serving := false
	for _, p := range env.runner.Pods(namespace, w.name) {
		if p.Name == victim && p.Ready && p.Terminating {
			serving = post(ctx, p.Addr, "/splits", "n", 0) == nil
		}
	}
	if !serving {
		t.Errorf("%s no longer served when the scaler left it out: the evidence shows nothing", victim)
	}
	if time.Since(deleted) > hold*time.Second {
		t.Errorf("left out only %.1fs after the deletion, after the %ds preStop sleep", time.Since(deleted).Seconds(), hold)
	}
	t.Logf("during: rawScaleValue %.3g scaleValue %.3g reason %q (the pod still served: %v)", during.RawScaleValue, during.ScaleValue, during.Reason, serving)
	writeJSON(t, "terminating-pod.json", map[string]any{
		"pod": victim, "preStopSleepSeconds": hold,
		"before":              map[string]any{"rawScaleValue": before.RawScaleValue, "scaleValue": before.ScaleValue, "reason": before.Reason},
		"during":              map[string]any{"rawScaleValue": during.RawScaleValue, "scaleValue": during.ScaleValue, "reason": during.Reason, "podStillServing": serving},
		"endpointSlice":       sliceState,
		"leftOutAfterSeconds": time.Since(deleted).Seconds(),
	})
}

func deref(b *bool) bool { return b != nil && *b }

// writeJSON writes v under the results directory.
func writeJSON(t *testing.T, name string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Error(err)
		return
	}
	_ = os.MkdirAll(resultsDir, 0o755)
	if err := os.WriteFile(filepath.Join(resultsDir, name), data, 0o644); err != nil {
		t.Error(err)
	}
}

// victimTrial is one run of the victim-hints scenario.
type victimTrial struct {
	Trial  string `json:"trial"`
	Hints  bool   `json:"victimHints"`
	Loaded string `json:"loadedPod"`
	// Pods are the three pods by UID (the loaded one first: the lowest).
	Pods []string `json:"pods"`
	// CostsAt3 are the pods' pod-deletion-cost annotations before the
	// first scale-in; CostsAt2 before the second.
	CostsAt3 map[string]string `json:"costsAt3"`
	CostsAt2 map[string]string `json:"costsAt2,omitempty"`
	// RemovedAt3to2 and RemovedAt2to1 are the pods the ReplicaSet
	// controller removed at each step.
	RemovedAt3to2  []string `json:"removed3to2"`
	RemovedAt2to1  []string `json:"removed2to1"`
	Survivor       []string `json:"survivor"`
	LoadedSurvived bool     `json:"loadedSurvived"`
	// Seconds from each load drop to the step's pod removal.
	Seconds3to2 float64 `json:"seconds3to2"`
	Seconds2to1 float64 `json:"seconds2to1"`
}

// TestVictimHints: three replicas, load on one pod only, then the load
// falls so the HPA scales to two and then to one. The loaded pod is picked
// by UID (see victimRun). With victimHints the scaler
// keeps each pod's pod-deletion-cost in the order of its load, the idle
// pods go and the loaded one survives, in every trial; without, the
// trials record what the ReplicaSet controller removed. Each trial has its
// own Deployment; results/victims.md has them all.
func TestVictimHints(t *testing.T) {
	skipUnlessKube(t, false)
	t.Parallel()
	var mu sync.Mutex
	var results []victimTrial
	t.Cleanup(func() {
		slices.SortFunc(results, func(a, b victimTrial) int { return strings.Compare(a.Trial, b.Trial) })
		writeVictims(t, results)
	})
	// Two lanes in parallel, hints on and hints off, each running its
	// trials one after another: eight trials at once start 24 pods
	// together, and on two cores the CPU-rate samples of the other
	// scenarios jitter enough to overshoot their scale-out.
	for _, lane := range []struct {
		name   string
		hints  bool
		trials int
	}{{"on", true, 5}, {"off", false, 3}} {
		t.Run(lane.name, func(t *testing.T) {
			skipUnlessKube(t, lane.hints)
			t.Parallel()
			for i := 1; i <= lane.trials; i++ {
				trial := fmt.Sprintf("%s-%d", lane.name, i)
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					r := victimRun(t, "victim-"+trial, lane.hints)
					r.Trial = trial
					mu.Lock()
					results = append(results, r)
					mu.Unlock()
					if lane.hints && !r.LoadedSurvived {
						t.Errorf("victim hints on: the loaded pod %s did not survive (removed %v then %v)", r.Loaded, r.RemovedAt3to2, r.RemovedAt2to1)
					}
				})
			}
		})
	}
}

// The loaded pod's rate in each phase, on a capacity of 100 req/s: its CPU
// is the worst dimension, so the signal is rate/100 x replicas, and at
// targetPressure 0.7 it asks 3 replicas at 60 (0.6 x 3 / 0.7 = 2.6), 2 at 40
// (0.4 x 3 / 0.7 = 1.7; on 2, 1.1) and 1 at 15 (0.15 x 2 / 0.7 = 0.4).
var victimPhases = []float64{60, 40, 15}

func victimRun(t *testing.T, name string, hints bool) victimTrial {
	ctx := t.Context()
	res := victimTrial{Hints: hints}
	w := newWorkload(t, name, 3, 1, 3, env.scaler, fmt.Sprintf("victim hints %v: load on one pod; 3 -> 2 -> 1", hints), options{kube: true})
	// The loaded pod is the one with the lowest UID: fixed before any
	// load, and as random as a UID, so it owes nothing to the ReplicaSet
	// controller's own ranking of three pods that started together (the
	// hints-off trials record what that ranking removed).
	pods, err := env.cluster.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: podrunner.AppLabel + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(string(a.UID), string(b.UID)) })
	for _, p := range pods.Items {
		res.Pods = append(res.Pods, p.Name)
	}
	loaded := res.Pods[0]
	res.Loaded = loaded
	w.demand.Store(3)
	w.setPodLoads(map[string]float64{loaded: victimPhases[0]})
	md := w.pressureMetadata(map[string]string{"profile": "responsive"})
	delete(md, "ewmaHalfLife")
	delete(md, "scaleInGateWindow")
	if hints {
		md["victimHints"] = "true"
	}
	w.scaledObject(externalTrigger(md), nil)
	w.waitServed(60 * time.Second)
	w.waitFor(w.rec.Now(), 60*time.Second, "at 3 under the loaded pod", func(p record.Point) bool { return p.Desired == 3 && p.Ready == 3 })
	if hints {
		// The hints are in place before the load falls: the loaded pod
		// costs more than each idle one.
		if err := cluster.Poll(ctx, 30*time.Second, "pod-deletion-cost in load order", func(ctx context.Context) error {
			c := w.costs()
			return costOrdered(c, loaded)
		}); err != nil {
			t.Fatal(err)
		}
	} else {
		w.hold(5*time.Second, "at 3", func(p record.Point) bool { return p.Desired == 3 })
	}
	res.CostsAt3 = w.costs()
	if !hints {
		for p, c := range res.CostsAt3 {
			if c != "" {
				t.Errorf("victim hints off, yet %s has %s=%s", p, deletionCost, c)
			}
		}
	}

	before, _ := w.podNames()
	w.demand.Store(2)
	at := w.setPodLoads(map[string]float64{loaded: victimPhases[1]})
	p2 := w.waitFor(at, 90*time.Second, "scaled in to 2", func(p record.Point) bool { return p.Desired == 2 })
	removed, rest := awaitRemoval(t, w, before, 2)
	res.RemovedAt3to2, res.Seconds3to2 = removed, (p2.T - at).Seconds()
	res.CostsAt2 = w.costs()
	if hints && slices.Contains(rest, loaded) {
		if err := cluster.Poll(ctx, 30*time.Second, "pod-deletion-cost in load order at 2", func(ctx context.Context) error {
			return costOrdered(w.costs(), loaded)
		}); err != nil {
			t.Error(err)
		}
		res.CostsAt2 = w.costs()
	}

	w.demand.Store(1)
	at = w.setPodLoads(map[string]float64{loaded: victimPhases[2]})
	p1 := w.waitFor(at, 90*time.Second, "scaled in to 1", func(p record.Point) bool { return p.Desired == 1 })
	removed, rest = awaitRemoval(t, w, rest, 1)
	res.RemovedAt2to1, res.Seconds2to1 = removed, (p1.T - at).Seconds()
	res.Survivor = rest
	res.LoadedSurvived = slices.Equal(rest, []string{loaded})
	t.Logf("hints %v: pods %v, loaded %s; removed %v then %v; survivor %v; costs at 3 %v, at 2 %v",
		hints, res.Pods, loaded, res.RemovedAt3to2, res.RemovedAt2to1, rest, res.CostsAt3, res.CostsAt2)
	return res
}

// costOrdered: the loaded pod's pod-deletion-cost is set and above every
// other pod's (set or not).
func costOrdered(costs map[string]string, loaded string) error {
	lc, err := strconv.ParseInt(costs[loaded], 10, 32)
	if costs[loaded] == "" || err != nil {
		return fmt.Errorf("the loaded pod %s has no usable %s: %v", loaded, deletionCost, costs)
	}
	for p, c := range costs {
		if p == loaded || c == "" {
			continue
		}
		if v, err := strconv.ParseInt(c, 10, 32); err != nil || v >= lc {
			return fmt.Errorf("%s costs %s, not below the loaded pod's %d: %v", p, c, lc, costs)
		}
	}
	return nil
}

// awaitRemoval waits until n of the pods before are left (and no other
// live pod), and returns the removed ones and the rest.
func awaitRemoval(t *testing.T, w *workload, before []string, n int) (removed, rest []string) {
	t.Helper()
	err := cluster.Poll(w.ctx, 60*time.Second, fmt.Sprintf("%s: %d pods left", w.name, n), func(ctx context.Context) error {
		live, _ := w.podNames()
		if len(live) != n {
			return fmt.Errorf("live %v", live)
		}
		rest = live
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range before {
		if !slices.Contains(rest, p) {
			removed = append(removed, p)
		}
	}
	return removed, rest
}

func writeVictims(t *testing.T, results []victimTrial) {
	writeJSON(t, "victims.json", results)
	var b strings.Builder
	b.WriteString("# Victim hints: which pod the ReplicaSet controller removed\n\n")
	b.WriteString("Three replicas started together, load on one pod only (the one with the lowest UID), then 60 -> 40 -> 15 req/s on it: the HPA scales 3 -> 2 -> 1.\n\n")
	b.WriteString("| trial | victimHints | loaded pod | costs at 3 | removed 3->2 | removed 2->1 | survivor | loaded survived | s to 2 | s to 1 |\n| --- | --- | --- | --- | --- | --- | --- | --- | ---: | ---: |\n")
	on, onOK, off, offOK := 0, 0, 0, 0
	for _, r := range results {
		var costs []string
		for _, p := range r.Pods {
			costs = append(costs, fmt.Sprintf("%s=%q", p, r.CostsAt3[p]))
		}
		fmt.Fprintf(&b, "| %s | %v | %s | %s | %s | %s | %s | %v | %.1f | %.1f |\n", r.Trial, r.Hints, r.Loaded, strings.Join(costs, " "),
			strings.Join(r.RemovedAt3to2, " "), strings.Join(r.RemovedAt2to1, " "), strings.Join(r.Survivor, " "), r.LoadedSurvived, r.Seconds3to2, r.Seconds2to1)
		if r.Hints {
			on++
			if r.LoadedSurvived {
				onOK++
			}
		} else {
			off++
			if r.LoadedSurvived {
				offOK++
			}
		}
	}
	fmt.Fprintf(&b, "\nThe loaded pod survived in %d of %d trials with victim hints and %d of %d without.\n", onOK, on, offOK, off)
	_ = os.MkdirAll(resultsDir, 0o755)
	if err := os.WriteFile(filepath.Join(resultsDir, "victims.md"), []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
	t.Log("\n" + b.String())
}

// writeDiscoveryComparison sets the DNS scenario's reaction times beside
// the EndpointSlice one's (the same load steps, run at the same time).
func writeDiscoveryComparison() {
	measured.Lock()
	list := slices.Clone(measured.list)
	measured.Unlock()
	const dns, eps = "TestScaleOutThenGatedScaleIn", "TestScaleOutThenGatedScaleInEndpointSlices"
	by := map[string]map[string]float64{dns: {}, eps: {}}
	var whats []string
	for _, m := range list {
		if by[m.Scenario] == nil {
			continue
		}
		by[m.Scenario][m.What] = m.Seconds
		if !slices.Contains(whats, m.What) {
			whats = append(whats, m.What)
		}
	}
	if len(whats) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("# Discovery: DNS (dns+http://) against EndpointSlices (k8s://)\n\nThe same load steps, run at the same time on two Deployments.\n\n| reaction | DNS s | EndpointSlices s |\n| --- | ---: | ---: |\n")
	for _, w := range whats {
		cell := func(s string) string {
			if v, ok := by[s][w]; ok {
				return strconv.FormatFloat(v, 'f', 1, 64)
			}
			return "-"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", w, cell(dns), cell(eps))
	}
	_ = os.MkdirAll(resultsDir, 0o755)
	_ = os.WriteFile(filepath.Join(resultsDir, "discovery.md"), []byte(b.String()), 0o644)
	fmt.Print("\n=== e2e: " + b.String())
}
