package demo

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// collector exposes one consistent State per scrape: every series of a
// response comes from the same instant, so activations, CPU and WAL state
// never disagree about the load.
type collector struct{ w *Workload }

var (
	descActivations = prometheus.NewDesc(exposition.Activations, "Activation working set of this replica.", nil, nil)
	descCPU         = prometheus.NewDesc(exposition.CPUSeconds, "Total user and system CPU time spent in seconds.", nil, nil)
	descCPULimit    = prometheus.NewDesc(exposition.CPULimitCores, "CPU limit of this replica, in cores.", nil, nil)
	descMemory      = prometheus.NewDesc(exposition.MemoryBytes, "Resident memory size in bytes.", nil, nil)
	descMemoryLimit = prometheus.NewDesc(exposition.MemoryLimitBytes, "Memory limit of this replica, in bytes.", nil, nil)
	descWal         = prometheus.NewDesc(exposition.WalState, "WAL saturation: 0 Healthy, 1 Throttled, 2 Saturated.", nil, nil)
	descSplits      = prometheus.NewDesc(exposition.SplitsInFlight, "Splits in flight on this replica.", nil, nil)
	descRetained    = prometheus.NewDesc(exposition.TreeRetainedBytes, "WAL bytes retained by the tree.", []string{exposition.LabelTree}, nil)
	descCeiling     = prometheus.NewDesc(exposition.TreeRetainedBytesCeiling, "Retained-bytes budget of the tree.", []string{exposition.LabelTree}, nil)
	descTreeState   = prometheus.NewDesc(exposition.TreeSaturationState, "WAL saturation of the tree: 0, 1 or 2.", []string{exposition.LabelTree}, nil)
	descPlacement   = prometheus.NewDesc(exposition.PartitionAccount, "1 where the tree's partition is placed on the storage account.",
		[]string{exposition.LabelTree, exposition.LabelPartition, exposition.LabelAccount}, nil)
	descPadding = prometheus.NewDesc("demo_padding", "Unrelated series, to give the exposition a realistic size.", []string{"i"}, nil)

	descArrivals = prometheus.NewDesc(exposition.QueueArrivals, "Work that became ready.", nil, nil)
	descRuns     = prometheus.NewDesc(exposition.QueueRunDuration, "Run time of completed work, in seconds.", nil, nil)
	descReady    = prometheus.NewDesc(exposition.QueueReady, "Ready work waiting for a slot.", []string{exposition.LabelClass}, nil)
	descRetrying = prometheus.NewDesc(exposition.QueueRetrying, "Work waiting for its retry.", []string{exposition.LabelClass}, nil)
	descDue      = prometheus.NewDesc(exposition.QueueDue, "Fixed-start work that is due.", nil, nil)
	descBusy     = prometheus.NewDesc(exposition.QueueBusy, "Slots running work.", nil, nil)
	descReserved = prometheus.NewDesc(exposition.QueueReserved, "Slots reserved now.", nil, nil)
	descResStart = prometheus.NewDesc(exposition.QueueReservationStart, "Start of the reservation, Unix seconds; 0 is already started.",
		[]string{exposition.LabelReservation}, nil)
	descResEnd = prometheus.NewDesc(exposition.QueueReservationEnd, "End of the reservation, Unix seconds; 0 is open-ended.",
		[]string{exposition.LabelReservation}, nil)
	descResSlots = prometheus.NewDesc(exposition.QueueReservationSlots, "Slots the reservation holds.", []string{exposition.LabelReservation}, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descActivations, descCPU, descCPULimit, descMemory, descMemoryLimit,
		descWal, descSplits, descRetained, descCeiling, descTreeState, descPlacement, descPadding,
		descArrivals, descRuns, descReady, descRetrying, descDue, descBusy, descReserved,
		descResStart, descResEnd, descResSlots} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.w.State()
	cfg := c.w.cfg
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descActivations, s.WorkingSet)
	ch <- prometheus.MustNewConstMetric(descCPU, prometheus.CounterValue, s.CPUSeconds)
	gauge(descCPULimit, s.CPULimitCores)
	gauge(descMemory, s.MemoryBytes)
	gauge(descMemoryLimit, s.MemoryLimitBytes)
	gauge(descWal, float64(s.WalState))
	gauge(descSplits, s.Splits)
	gauge(descRetained, s.TreeRetained, cfg.Tree)
	gauge(descCeiling, cfg.TreeCeilingBytes, cfg.Tree)
	gauge(descTreeState, float64(s.WalState), cfg.Tree)
	for i, account := range cfg.Accounts {
		gauge(descPlacement, 1, cfg.Tree, strconv.Itoa(i), account)
	}
	for i := range cfg.PaddingSeries {
		gauge(descPadding, float64(i), strconv.Itoa(i))
	}
	if q := s.Queue; q != nil {
		collectQueue(ch, q, gauge)
	}
}

// runBuckets are the run-duration histogram's upper bounds, in seconds.
var runBuckets = prometheus.DefBuckets

// collectQueue exposes the queue. Every run takes the service time, so
// each bucket holds every run or none, and the mean is the service time.
func collectQueue(ch chan<- prometheus.Metric, q *QueueState, gauge func(*prometheus.Desc, float64, ...string)) {
	ch <- prometheus.MustNewConstMetric(descArrivals, prometheus.CounterValue, q.Arrivals)
	buckets := make(map[float64]uint64, len(runBuckets))
	for _, le := range runBuckets {
		if q.ServiceTime <= le {
			buckets[le] = uint64(q.Runs)
		} else {
			buckets[le] = 0
		}
	}
	ch <- prometheus.MustNewConstHistogram(descRuns, uint64(q.Runs), q.RunSeconds, buckets)
	gauge(descReady, q.Ready, q.Class)
	gauge(descRetrying, q.Retrying, q.Class)
	gauge(descDue, q.Due)
	gauge(descBusy, q.Busy)
	gauge(descReserved, q.Reserved)
	for id, r := range q.Reservations {
		gauge(descResStart, r.Start, id)
		gauge(descResEnd, r.End, id)
		gauge(descResSlots, r.Slots, id)
	}
}
