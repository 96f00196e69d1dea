// Package record samples a Deployment's replica counts over a scenario,
// waits on them, and reports the run: the SPEC Research Group elasticity
// metrics and a replica-over-time SVG.
package record

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Point is one sample.
type Point struct {
	// T is the time since the recording started.
	T time.Duration `json:"t"`
	// Desired is the Deployment's spec.replicas: what KEDA and the HPA
	// decided.
	Desired int `json:"desired"`
	// Ready is status.readyReplicas: the supply.
	Ready int `json:"ready"`
	// Demand is the replicas the load needs (the scenario's model).
	Demand int `json:"demand"`
	// Load is the workload's total request rate.
	Load float64 `json:"load"`
	// Signal is the scaler's scaleValue, NaN when unknown.
	Signal float64 `json:"signal"`
}

// Event marks a change the scenario made.
type Event struct {
	T     time.Duration `json:"t"`
	Label string        `json:"label"`
}

// Probe reads what the Deployment cannot tell: the load and its demand, and
// the scaler's signal.
type Probe struct {
	// Load returns the total load and the replicas it needs.
	Load func() (float64, int)
	// Signal returns the scaler's scaleValue, or NaN.
	Signal func(ctx context.Context) float64
}

// Recorder samples one Deployment.
type Recorder struct {
	client    kubernetes.Interface
	namespace string
	name      string
	probe     Probe
	every     time.Duration
	start     time.Time
	cancel    context.CancelFunc
	done      chan struct{}

	mu     sync.Mutex
	points []Point
	events []Event
	notify chan struct{} // closed and replaced on every new point
	err    error
}

// Start samples namespace/name every interval until Stop.
func Start(ctx context.Context, client kubernetes.Interface, namespace, name string, every time.Duration, probe Probe) *Recorder {
	ctx, cancel := context.WithCancel(ctx)
	r := &Recorder{
		client: client, namespace: namespace, name: name, probe: probe, every: every,
		start: time.Now(), cancel: cancel, done: make(chan struct{}), notify: make(chan struct{}),
	}
	go r.loop(ctx)
	return r
}

func (r *Recorder) loop(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		r.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Recorder) sample(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	d, err := r.client.AppsV1().Deployments(r.namespace).Get(cctx, r.name, metav1.GetOptions{})
	if err != nil {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
		return
	}
	p := Point{T: time.Since(r.start), Ready: int(d.Status.ReadyReplicas), Signal: math.NaN()}
	if d.Spec.Replicas != nil {
		p.Desired = int(*d.Spec.Replicas)
	}
	if r.probe.Load != nil {
		p.Load, p.Demand = r.probe.Load()
	}
	if r.probe.Signal != nil {
		p.Signal = r.probe.Signal(cctx)
	}
	r.mu.Lock()
	r.points = append(r.points, p)
	r.err = nil
	close(r.notify)
	r.notify = make(chan struct{})
	r.mu.Unlock()
}

// Mark records an event now and returns its time.
func (r *Recorder) Mark(label string) time.Duration {
	t := time.Since(r.start)
	r.mu.Lock()
	r.events = append(r.events, Event{T: t, Label: label})
	r.mu.Unlock()
	return t
}

// Now is the time since the recording started.
func (r *Recorder) Now() time.Duration { return time.Since(r.start) }

// Last returns the latest point.
func (r *Recorder) Last() (Point, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.points) == 0 {
		return Point{}, false
	}
	return r.points[len(r.points)-1], true
}

// WaitFor waits until a point taken at or after since satisfies ok, and
// returns that point; or fails after timeout, describing the last point.
func (r *Recorder) WaitFor(ctx context.Context, since, timeout time.Duration, what string, ok func(Point) bool) (Point, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		r.mu.Lock()
		pts, notify, err := r.points[seen:], r.notify, r.err
		seen = len(r.points)
		r.mu.Unlock()
		for _, p := range pts {
			if p.T >= since && ok(p) {
				return p, nil
			}
		}
		select {
		case <-notify:
		case <-deadline.C:
			last, _ := r.Last()
			return last, fmt.Errorf("%s: not within %s; last sample %s (last API error: %v)", what, timeout, last, err)
		case <-ctx.Done():
			return Point{}, ctx.Err()
		}
	}
}

// Hold checks that every point from now for d satisfies ok; it returns the
// first point that does not, with an error.
func (r *Recorder) Hold(ctx context.Context, d time.Duration, what string, ok func(Point) bool) error {
	from := r.Now()
	p, err := r.WaitFor(ctx, from, d, "", func(p Point) bool { return !ok(p) })
	if err == nil {
		return fmt.Errorf("%s: broken %.1fs into the %s hold: %s", what, (p.T - from).Seconds(), d, p)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// Snapshot returns the run so far and keeps sampling, for a scenario that
// measures before its cleanup stops the recording.
func (r *Recorder) Snapshot() Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Run{Points: append([]Point(nil), r.points...), Events: append([]Event(nil), r.events...), Every: r.every}
}

// Stop ends the sampling and returns the run.
func (r *Recorder) Stop() Run {
	r.cancel()
	<-r.done
	return r.Snapshot()
}

func (p Point) String() string {
	return fmt.Sprintf("t=%.1fs desired=%d ready=%d demand=%d load=%g signal=%.3g", p.T.Seconds(), p.Desired, p.Ready, p.Demand, p.Load, p.Signal)
}
