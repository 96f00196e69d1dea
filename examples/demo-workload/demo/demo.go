// Package demo is a workload replica that exposes the Barometer pressure
// exposition contract (docs/exposition.md) and whose pressure follows the
// load it is given. It serves no real requests and burns no real CPU: it is
// told a request rate and derives, deterministically, what a replica with
// its capacity would show under that rate. That keeps several replicas in
// one test process independent of each other and of the machine's load.
//
// Under a rate of r requests per second and a capacity of c:
//
//   - utilisation u = r / c; CPU runs at min(u, 1) x the CPU limit (a
//     CPU-limited process cannot use more), integrated into the
//     process_cpu_seconds_total counter as time passes;
//   - the working set (barometer_activations) is u x WorkingSetAtCapacity:
//     it keeps growing past capacity, as queued work does;
//   - resident memory is BaseMemoryBytes plus BytesPerActivation per
//     activation;
//   - the WAL state degrades near saturation: Throttled from u >= 0.75 (the
//     admission queue at 3/4 of its cap), Saturated from u >= 0.95;
//   - the storage tree retains 0.7 x u of its ceiling, with the WAL state;
//   - splits in flight are whatever was last set.
//
// In queue mode (Config.Queue) it also exposes the work-queue series: work
// arrives at r per second (barometer_queue_arrivals_total) into one queue
// served at c per second, each run taking ServiceTime (the run-duration
// histogram's mean); ready work (barometer_queue_ready{class}) piles up at
// r - c while r exceeds c and drains at c - r after; busy slots are the
// runs in flight, min(slots, served rate x ServiceTime) with
// slots = c x ServiceTime. Retrying work, due work and reservations are
// whatever was last set.
package demo

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// Config describes one replica. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Capacity is the request rate the replica serves at full CPU.
	Capacity float64
	// CPULimitCores is exposed as barometer_cpu_limit_cores.
	CPULimitCores float64
	// MemoryLimitBytes is exposed as barometer_memory_limit_bytes.
	MemoryLimitBytes float64
	// BaseMemoryBytes is resident memory at no load.
	BaseMemoryBytes float64
	// BytesPerActivation is the memory one activation holds.
	BytesPerActivation float64
	// WorkingSetAtCapacity is the working set when the rate equals capacity.
	WorkingSetAtCapacity float64
	// Tree names the storage tree; Accounts place its partitions (partition
	// i on Accounts[i]); TreeCeilingBytes is its retained-bytes budget.
	Tree             string
	Accounts         []string
	TreeCeilingBytes float64
	// PaddingSeries adds that many unrelated gauges, so the exposition has
	// the size of a real service's (Go runtime, HTTP histograms).
	PaddingSeries int
	// Queue turns on queue mode: the replica also exposes the work-queue
	// series. ServiceTime is how long one run takes; QueueClass labels its
	// backlog.
	Queue       bool
	ServiceTime time.Duration
	QueueClass  string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultConfig returns the defaults: capacity 100 req/s on 1 core and
// 512 MiB, 64 MiB at rest, 4 KiB per activation, 80,000 activations at
// capacity, tree "wal" on accounts "account-a" and "account-b" with a 1 GiB
// ceiling, no padding; no queue, which when on runs 50 ms per run (5 slots)
// and labels its backlog class "normal".
func DefaultConfig() Config {
	return Config{
		Capacity:             100,
		CPULimitCores:        1,
		MemoryLimitBytes:     512 << 20,
		BaseMemoryBytes:      64 << 20,
		BytesPerActivation:   4 << 10,
		WorkingSetAtCapacity: 80000,
		Tree:                 "wal",
		Accounts:             []string{"account-a", "account-b"},
		TreeCeilingBytes:     1 << 30,
		ServiceTime:          50 * time.Millisecond,
		QueueClass:           "normal",
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	for _, f := range []struct{ dst, def *float64 }{
		{&c.Capacity, &d.Capacity}, {&c.CPULimitCores, &d.CPULimitCores},
		{&c.MemoryLimitBytes, &d.MemoryLimitBytes}, {&c.BaseMemoryBytes, &d.BaseMemoryBytes},
		{&c.BytesPerActivation, &d.BytesPerActivation}, {&c.WorkingSetAtCapacity, &d.WorkingSetAtCapacity},
		{&c.TreeCeilingBytes, &d.TreeCeilingBytes},
	} {
		if *f.dst <= 0 {
			*f.dst = *f.def
		}
	}
	if c.Tree == "" {
		c.Tree = d.Tree
	}
	if len(c.Accounts) == 0 {
		c.Accounts = d.Accounts
	}
	if c.ServiceTime <= 0 {
		c.ServiceTime = d.ServiceTime
	}
	if c.QueueClass == "" {
		c.QueueClass = d.QueueClass
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Workload is one replica. It is safe for concurrent use.
type Workload struct {
	cfg Config
	reg *prometheus.Registry

	mu         sync.Mutex
	rps        float64
	splits     float64
	cpuSeconds float64   // integral of CPU use up to cpuAt
	cpuAt      time.Time // when cpuSeconds was last advanced
	queue      *queue    // nil outside queue mode
}

// New returns a replica at zero load.
func New(cfg Config) *Workload {
	cfg = cfg.withDefaults()
	w := &Workload{cfg: cfg, reg: prometheus.NewRegistry(), cpuAt: cfg.Now()}
	if cfg.Queue {
		w.queue = &queue{service: cfg.ServiceTime}
	}
	w.reg.MustRegister(collector{w})
	return w
}

// SetLoad sets the request rate (negative reads 0). CPU used so far is
// accounted at the old rate first, so the counter's rate between two scrapes
// is exactly the load that held between them.
func (w *Workload) SetLoad(rps float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance()
	w.rps = max(rps, 0)
}

// SetSplits sets the splits in flight (negative reads 0).
func (w *Workload) SetSplits(n float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.splits = max(n, 0)
}

// advance integrates CPU use and the queue up to now; w.mu is held.
func (w *Workload) advance() {
	now := w.cfg.Now()
	if dt := now.Sub(w.cpuAt).Seconds(); dt > 0 {
		w.cpuSeconds += w.utilisation() * w.cfg.CPULimitCores * dt
		if w.queue != nil {
			w.queue.advance(w.rps, w.cfg.Capacity, dt)
		}
		w.cpuAt = now
	}
}

// utilisation is the CPU share in use, 0..1; w.mu is held.
func (w *Workload) utilisation() float64 { return min(w.rps/w.cfg.Capacity, 1) }

// State is what the replica currently shows.
type State struct {
	RPS              float64 `json:"rps"`
	Capacity         float64 `json:"capacity"`
	Load             float64 `json:"load"` // rps / capacity, unclamped
	CPUSeconds       float64 `json:"cpuSeconds"`
	CPULimitCores    float64 `json:"cpuLimitCores"`
	WorkingSet       float64 `json:"workingSet"`
	MemoryBytes      float64 `json:"memoryBytes"`
	MemoryLimitBytes float64 `json:"memoryLimitBytes"`
	WalState         int     `json:"walState"`
	Splits           float64 `json:"splits"`
	TreeRetained     float64 `json:"treeRetainedBytes"`
	// Queue is the work queue in queue mode, nil otherwise.
	Queue *QueueState `json:"queue,omitempty"`
}

// State returns the replica's current figures.
func (w *Workload) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance()
	load := w.rps / w.cfg.Capacity
	ws := load * w.cfg.WorkingSetAtCapacity
	var q *QueueState
	if w.queue != nil {
		q = w.queue.state(w.rps, w.cfg.Capacity, w.cfg.QueueClass)
	}
	return State{
		RPS:              w.rps,
		Capacity:         w.cfg.Capacity,
		Load:             load,
		CPUSeconds:       w.cpuSeconds,
		CPULimitCores:    w.cfg.CPULimitCores,
		WorkingSet:       ws,
		MemoryBytes:      w.cfg.BaseMemoryBytes + ws*w.cfg.BytesPerActivation,
		MemoryLimitBytes: w.cfg.MemoryLimitBytes,
		WalState:         int(walState(load)),
		Splits:           w.splits,
		TreeRetained:     math.Round(0.7 * load * w.cfg.TreeCeilingBytes),
		Queue:            q,
	}
}

func walState(load float64) pressure.WalSaturationState {
	switch {
	case load >= 0.95:
		return pressure.Saturated
	case load >= 0.75:
		return pressure.Throttled
	}
	return pressure.Healthy
}

// Registry is the replica's metrics registry.
func (w *Workload) Registry() *prometheus.Registry { return w.reg }

// Handler serves the replica:
//
//	GET  /metrics           the exposition (text or protobuf, negotiated)
//	GET  /state             the current figures as JSON
//	POST /load?rps=N        set the request rate
//	POST /splits?n=N        set the splits in flight
//
// and in queue mode (see queueRoutes):
//
//	POST   /queue/service-time?s=SECONDS
//	POST   /queue/ready?n=N, /queue/retrying?n=N, /queue/due?n=N, /queue/reserved?n=N
//	POST   /queue/reservation?id=ID&start=UNIX&end=UNIX&slots=N
//	DELETE /queue/reservation?id=ID
func (w *Workload) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /state", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(w.State())
	})
	mux.HandleFunc("POST /load", setter("rps", w.SetLoad))
	mux.HandleFunc("POST /splits", setter("n", w.SetSplits))
	if w.queue != nil {
		w.queueRoutes(mux)
	}
	return mux
}

func setter(param string, set func(float64)) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		v, err := strconv.ParseFloat(strings.TrimSpace(r.FormValue(param)), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			http.Error(rw, fmt.Sprintf("%s must be a number >= 0", param), http.StatusBadRequest)
			return
		}
		set(v)
		rw.WriteHeader(http.StatusNoContent)
	}
}
