// Package victim keeps each pod's controller.kubernetes.io/pod-deletion-cost
// annotation in the order of its load, so that when the HPA shrinks a
// Deployment the ReplicaSet controller, which deletes the pods of lowest
// cost first, removes an idle replica rather than a busy one. It consumes
// samples after the decider has folded them and never changes a decision
// (docs/kubernetes.md says what the hints cannot promise).
package victim

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// Annotation is the annotation the ReplicaSet controller ranks pods by.
const Annotation = "controller.kubernetes.io/pod-deletion-cost"

// Patcher sets one pod's deletion cost (package kube's Patcher).
type Patcher interface {
	SetDeletionCost(ctx context.Context, namespace, pod string, cost int) error
}

// Hints is the scaler's one victim-hint writer: it owns the patcher and the
// counters every target's Ranker adds to. It is a prometheus.Collector.
type Hints struct {
	patcher Patcher
	patches *prometheus.CounterVec
	errors  *prometheus.CounterVec
}

// New returns the writer that patches through p.
func New(p Patcher) *Hints {
	return &Hints{
		patcher: p,
		patches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_victim_hint_patches_total",
			Help: "Pod-deletion-cost annotations written, by namespace.",
		}, []string{"namespace"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_victim_hint_errors_total",
			Help: "Pod-deletion-cost patches that failed (retried at the next sample), by namespace.",
		}, []string{"namespace"}),
	}
}

// Describe implements prometheus.Collector.
func (h *Hints) Describe(ch chan<- *prometheus.Desc) { h.patches.Describe(ch); h.errors.Describe(ch) }

// Collect implements prometheus.Collector.
func (h *Hints) Collect(ch chan<- prometheus.Metric) { h.patches.Collect(ch); h.errors.Collect(ch) }

// Ranker keeps one target's pods ranked. Its sampler calls Sample from one
// goroutine at a time, so it needs no lock.
type Ranker struct {
	hints     *Hints
	namespace string
	load      func(pressure.ReplicaObservation, map[string]float64) float64
	last      map[string]float64 // pod -> its last load read
	written   map[string]int     // pod -> the cost last written
}

// For returns the ranker of a target whose pods live in namespace. pressure
// says the target's decider is the pressure signal, whose load is a
// replica's worst dimension; a replica policy's is its working set (the
// work in flight on it).
func (h *Hints) For(namespace string, pressurePolicy bool) *Ranker {
	load := func(r pressure.ReplicaObservation, _ map[string]float64) float64 { return r.WorkingSet }
	if pressurePolicy {
		load = func(r pressure.ReplicaObservation, worst map[string]float64) float64 { return worst[r.Name] }
	}
	return &Ranker{hints: h, namespace: namespace, load: load, last: map[string]float64{}, written: map[string]int{}}
}

// Sample ranks the sample's pods by load, densely (equal loads share a
// rank, the idlest is 0), and patches each pod whose rank changed: at most
// one patch per pod per sample, none when nothing moved. A replica that
// did not answer keeps its last load; a pod the sample no longer names
// (deleted, or terminating) is forgotten. A failed patch is counted and
// tried again at the next sample.
func (r *Ranker) Sample(ctx context.Context, obs pressure.Observation, in signal.Input) {
	worst := make(map[string]float64, len(in.Compute.Replicas))
	for _, p := range in.Compute.Replicas {
		worst[p.Name] = p.Worst()
	}
	now := make(map[string]float64, len(obs.Replicas)+len(obs.Missing))
	for _, rep := range obs.Replicas {
		if rep.Pod != "" {
			now[rep.Pod] = r.load(rep, worst)
		}
	}
	for _, m := range obs.Missing {
		if v, ok := r.last[m.Name]; ok {
			now[m.Name] = v
		}
	}
	r.last = now
	for pod := range r.written {
		if _, ok := now[pod]; !ok {
			delete(r.written, pod)
		}
	}
	for pod, rank := range ranks(now) {
		if c, ok := r.written[pod]; ok && c == rank {
			continue
		}
		if err := r.hints.patcher.SetDeletionCost(ctx, r.namespace, pod, rank); err != nil {
			r.hints.errors.WithLabelValues(r.namespace).Inc()
			continue
		}
		r.hints.patches.WithLabelValues(r.namespace).Inc()
		r.written[pod] = rank
	}
}

// ranks gives each pod the number of distinct loads below its own.
func ranks(load map[string]float64) map[string]int {
	pods := make([]string, 0, len(load))
	for p := range load {
		pods = append(pods, p)
	}
	slices.SortFunc(pods, func(a, b string) int { return cmp.Or(cmp.Compare(load[a], load[b]), strings.Compare(a, b)) })
	out := make(map[string]int, len(pods))
	rank := 0
	for i, p := range pods {
		if i > 0 && load[p] > load[pods[i-1]] {
			rank++
		}
		out[p] = rank
	}
	return out
}
