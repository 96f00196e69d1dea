// Package exposition is the pressure exposition contract: the Prometheus
// metric names a workload exposes per replica so that Barometer can read its
// pressure and its work queue, and the trigger-metadata keys that rename
// them. It is shared by the sources that read the contract (scrape,
// prometheus) and by the demo workload that exposes it; docs/exposition.md is
// its prose.
//
// The queue series are folded by rules both sources share (QueueFold,
// QueueCounters), so that reading a workload by scraping it and through a
// Prometheus server gives the same queue.
package exposition

// The default metric names.
const (
	// Activations is a gauge: the replica's activation working set.
	Activations = "barometer_activations"
	// CPUSeconds is the standard process CPU counter; utilisation is its rate
	// over the CPU limit.
	CPUSeconds = "process_cpu_seconds_total"
	// CPULimitCores is a gauge: the replica's CPU limit in cores.
	CPULimitCores = "barometer_cpu_limit_cores"
	// MemoryBytes is the standard resident-memory gauge.
	MemoryBytes = "process_resident_memory_bytes"
	// MemoryLimitBytes is a gauge: the replica's memory ceiling. Without it
	// the replica has no ceiling and its resource dimension is CPU only.
	MemoryLimitBytes = "barometer_memory_limit_bytes"
	// WalState is a gauge: 0 Healthy, 1 Throttled, 2 Saturated.
	WalState = "barometer_wal_saturation_state"
	// SplitsInFlight is a gauge: splits in flight on the replica.
	SplitsInFlight = "barometer_splits_in_flight"
	// TreeRetainedBytes is a gauge per {tree}: WAL bytes the tree retains.
	TreeRetainedBytes = "barometer_wal_tree_retained_bytes"
	// TreeRetainedBytesCeiling is a gauge per {tree}: the tree's budget.
	TreeRetainedBytesCeiling = "barometer_wal_tree_retained_bytes_ceiling"
	// TreeSaturationState is a gauge per {tree}: 0, 1 or 2 as WalState.
	TreeSaturationState = "barometer_wal_tree_saturation_state"
	// PartitionAccount is a gauge per {tree, partition, account} set to 1
	// where the tree's partition (0, 1, ...) is placed on the account.
	PartitionAccount = "barometer_wal_partition_account"
)

// The queue's default metric names. A workload without a work queue exposes
// none of them; one with a queue exposes what it knows. Counters are read
// raw (never as rates): the queue policy derives rates itself.
const (
	// QueueArrivals is a counter: work that became ready.
	QueueArrivals = "barometer_queue_arrivals_total"
	// QueueRunDuration is a histogram or summary of run times in seconds, of
	// which only _sum and _count are read; two plain counters named
	// QueueRunDuration+"_sum" and +"_count" do as well.
	QueueRunDuration = "barometer_queue_run_duration_seconds"
	// QueueReady and QueueRetrying are gauges per {class}: work waiting for a
	// slot, and work waiting for its retry.
	QueueReady    = "barometer_queue_ready"
	QueueRetrying = "barometer_queue_retrying"
	// QueueDue is a gauge: fixed-start work that is due now.
	QueueDue = "barometer_queue_due_fixed_start"
	// QueueBusy is a gauge: slots running work now.
	QueueBusy = "barometer_queue_busy"
	// QueueReservationStart and QueueReservationEnd are gauges per {id}: a
	// reservation's interval as Unix timestamps in seconds, 0 (or absent)
	// for open on that side; QueueReservationSlots is how many slots it
	// holds, 1 when absent.
	QueueReservationStart = "barometer_queue_reservation_start_timestamp_seconds"
	QueueReservationEnd   = "barometer_queue_reservation_end_timestamp_seconds"
	QueueReservationSlots = "barometer_queue_reservation_slots"
	// QueueReserved is a gauge: slots reserved now, for a workload that
	// knows no intervals.
	QueueReserved = "barometer_queue_reserved"
)

// The labels of the storage and queue series. They are fixed: only metric
// names can be renamed.
const (
	LabelTree      = "tree"
	LabelPartition = "partition"
	LabelAccount   = "account"
	// LabelClass tells the queue's backlog gauges apart by work class.
	LabelClass = "class"
	// LabelReservation joins a reservation's start, end and slots series.
	LabelReservation = "id"
)

// Names are the metric names in force for one ScaledObject.
type Names struct {
	Activations              string
	CPUSeconds               string
	CPULimitCores            string
	MemoryBytes              string
	MemoryLimitBytes         string
	WalState                 string
	SplitsInFlight           string
	TreeRetainedBytes        string
	TreeRetainedBytesCeiling string
	TreeSaturationState      string
	PartitionAccount         string

	QueueArrivals         string
	QueueRunDuration      string
	QueueReady            string
	QueueRetrying         string
	QueueDue              string
	QueueBusy             string
	QueueReservationStart string
	QueueReservationEnd   string
	QueueReservationSlots string
	QueueReserved         string
}

// DefaultNames returns the contract's names.
func DefaultNames() Names {
	return Names{
		Activations:              Activations,
		CPUSeconds:               CPUSeconds,
		CPULimitCores:            CPULimitCores,
		MemoryBytes:              MemoryBytes,
		MemoryLimitBytes:         MemoryLimitBytes,
		WalState:                 WalState,
		SplitsInFlight:           SplitsInFlight,
		TreeRetainedBytes:        TreeRetainedBytes,
		TreeRetainedBytesCeiling: TreeRetainedBytesCeiling,
		TreeSaturationState:      TreeSaturationState,
		PartitionAccount:         PartitionAccount,
		QueueArrivals:            QueueArrivals,
		QueueRunDuration:         QueueRunDuration,
		QueueReady:               QueueReady,
		QueueRetrying:            QueueRetrying,
		QueueDue:                 QueueDue,
		QueueBusy:                QueueBusy,
		QueueReservationStart:    QueueReservationStart,
		QueueReservationEnd:      QueueReservationEnd,
		QueueReservationSlots:    QueueReservationSlots,
		QueueReserved:            QueueReserved,
	}
}

// Override is one metadata key that renames one metric.
type Override struct {
	// Key is the trigger-metadata key, e.g. "activationMetric".
	Key string
	// Name points at the field the key sets.
	Name *string
}

// Overrides lists, in a fixed order, the metadata key of every name in n,
// so a parser can read each key into its field.
func (n *Names) Overrides() []Override {
	return []Override{
		{"activationMetric", &n.Activations},
		{"cpuMetric", &n.CPUSeconds},
		{"cpuLimitMetric", &n.CPULimitCores},
		{"memoryMetric", &n.MemoryBytes},
		{"memoryLimitMetric", &n.MemoryLimitBytes},
		{"walStateMetric", &n.WalState},
		{"splitsMetric", &n.SplitsInFlight},
		{"treeRetainedBytesMetric", &n.TreeRetainedBytes},
		{"treeRetainedBytesCeilingMetric", &n.TreeRetainedBytesCeiling},
		{"treeSaturationMetric", &n.TreeSaturationState},
		{"partitionAccountMetric", &n.PartitionAccount},
		{"queueArrivalsMetric", &n.QueueArrivals},
		{"queueRunDurationMetric", &n.QueueRunDuration},
		{"queueReadyMetric", &n.QueueReady},
		{"queueRetryingMetric", &n.QueueRetrying},
		{"queueDueMetric", &n.QueueDue},
		{"queueBusyMetric", &n.QueueBusy},
		{"queueReservationStartMetric", &n.QueueReservationStart},
		{"queueReservationEndMetric", &n.QueueReservationEnd},
		{"queueReservationSlotsMetric", &n.QueueReservationSlots},
		{"queueReservedMetric", &n.QueueReserved},
	}
}

// All returns every name, in the order of Overrides. The run-duration name
// is the histogram's or summary's; see Families for what a reader meets.
func (n Names) All() []string {
	o := n.Overrides()
	out := make([]string, len(o))
	for i, x := range o {
		out[i] = *x.Name
	}
	return out
}

// Families returns every metric family name a reader of the exposition may
// meet: All, plus the run duration's _sum and _count, which a workload may
// expose as two plain counters instead of a histogram or summary (and which
// the text format spells out even for a histogram).
func (n Names) Families() []string {
	return append(n.All(), n.QueueRunDuration+SumSuffix, n.QueueRunDuration+CountSuffix)
}

// The suffixes of a histogram's or summary's sum and count series.
const (
	SumSuffix   = "_sum"
	CountSuffix = "_count"
)
