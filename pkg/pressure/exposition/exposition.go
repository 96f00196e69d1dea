// Package exposition is the pressure exposition contract: the Prometheus
// metric names a workload exposes per replica so that Barometer can read its
// pressure, and the trigger-metadata keys that rename them. It is shared by
// the sources that read the contract (scrape, prometheus) and by the demo
// workload that exposes it; docs/exposition.md is its prose.
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

// The labels of the storage series. They are fixed: only metric names can be
// renamed.
const (
	LabelTree      = "tree"
	LabelPartition = "partition"
	LabelAccount   = "account"
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
	}
}

// All returns every name, in the order of Overrides.
func (n Names) All() []string {
	o := n.Overrides()
	out := make([]string, len(o))
	for i, x := range o {
		out[i] = *x.Name
	}
	return out
}
