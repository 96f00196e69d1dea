package demo

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// RegisterOTel records the replica's contract on meter as OpenTelemetry
// asynchronous instruments, under the contract's own names, so that the
// replica can push them over OTLP (the scaler's otlp source) besides
// serving them for scraping. One callback reads one State per collection,
// so the series of one export agree about the load, as a scrape's do.
//
// The run duration is pushed as its two plain counters (_sum and _count),
// which the otlp source reads as it reads a histogram's sum and count.
func (w *Workload) RegisterOTel(meter metric.Meter) error {
	var errs []error
	gauge := func(name string) metric.Float64ObservableGauge {
		g, err := meter.Float64ObservableGauge(name)
		errs = append(errs, err)
		return g
	}
	counter := func(name string) metric.Float64ObservableCounter {
		c, err := meter.Float64ObservableCounter(name)
		errs = append(errs, err)
		return c
	}
	activations, cpuLimit := gauge(exposition.Activations), gauge(exposition.CPULimitCores)
	memory, memoryLimit := gauge(exposition.MemoryBytes), gauge(exposition.MemoryLimitBytes)
	wal, splits := gauge(exposition.WalState), gauge(exposition.SplitsInFlight)
	retained, ceiling := gauge(exposition.TreeRetainedBytes), gauge(exposition.TreeRetainedBytesCeiling)
	treeState, placement := gauge(exposition.TreeSaturationState), gauge(exposition.PartitionAccount)
	cpu := counter(exposition.CPUSeconds)
	instruments := []metric.Observable{activations, cpuLimit, memory, memoryLimit, wal, splits, retained, ceiling, treeState, placement, cpu}
	var q otelQueue
	if w.queue != nil {
		q = otelQueue{
			arrivals: counter(exposition.QueueArrivals),
			runSum:   counter(exposition.QueueRunDuration + exposition.SumSuffix),
			runCount: counter(exposition.QueueRunDuration + exposition.CountSuffix),
			ready:    gauge(exposition.QueueReady), retrying: gauge(exposition.QueueRetrying),
			due: gauge(exposition.QueueDue), busy: gauge(exposition.QueueBusy), reserved: gauge(exposition.QueueReserved),
			resStart: gauge(exposition.QueueReservationStart), resEnd: gauge(exposition.QueueReservationEnd),
			resSlots: gauge(exposition.QueueReservationSlots),
		}
		instruments = append(instruments, q.arrivals, q.runSum, q.runCount, q.ready, q.retrying, q.due, q.busy,
			q.reserved, q.resStart, q.resEnd, q.resSlots)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := w.State()
		cfg := w.cfg
		tree := metric.WithAttributes(attribute.String(exposition.LabelTree, cfg.Tree))
		o.ObserveFloat64(activations, s.WorkingSet)
		o.ObserveFloat64(cpu, s.CPUSeconds)
		o.ObserveFloat64(cpuLimit, s.CPULimitCores)
		o.ObserveFloat64(memory, s.MemoryBytes)
		o.ObserveFloat64(memoryLimit, s.MemoryLimitBytes)
		o.ObserveFloat64(wal, float64(s.WalState))
		o.ObserveFloat64(splits, s.Splits)
		o.ObserveFloat64(retained, s.TreeRetained, tree)
		o.ObserveFloat64(ceiling, cfg.TreeCeilingBytes, tree)
		o.ObserveFloat64(treeState, float64(s.WalState), tree)
		for i, account := range cfg.Accounts {
			o.ObserveFloat64(placement, 1, metric.WithAttributes(attribute.String(exposition.LabelTree, cfg.Tree),
				attribute.String(exposition.LabelPartition, strconv.Itoa(i)), attribute.String(exposition.LabelAccount, account)))
		}
		if s.Queue != nil {
			q.observe(o, s.Queue)
		}
		return nil
	}, instruments...)
	return err
}

// otelQueue is the work queue's instruments in queue mode.
type otelQueue struct {
	arrivals, runSum, runCount           metric.Float64ObservableCounter
	ready, retrying, due, busy, reserved metric.Float64ObservableGauge
	resStart, resEnd, resSlots           metric.Float64ObservableGauge
}

func (q otelQueue) observe(o metric.Observer, s *QueueState) {
	class := metric.WithAttributes(attribute.String(exposition.LabelClass, s.Class))
	o.ObserveFloat64(q.arrivals, s.Arrivals)
	o.ObserveFloat64(q.runSum, s.RunSeconds)
	o.ObserveFloat64(q.runCount, s.Runs)
	o.ObserveFloat64(q.ready, s.Ready, class)
	o.ObserveFloat64(q.retrying, s.Retrying, class)
	o.ObserveFloat64(q.due, s.Due)
	o.ObserveFloat64(q.busy, s.Busy)
	o.ObserveFloat64(q.reserved, s.Reserved)
	for id, r := range s.Reservations {
		res := metric.WithAttributes(attribute.String(exposition.LabelReservation, id))
		o.ObserveFloat64(q.resStart, r.Start, res)
		o.ObserveFloat64(q.resEnd, r.End, res)
		o.ObserveFloat64(q.resSlots, r.Slots, res)
	}
}
