package promsource

// dimension names one query. key is its metadata key, used in errors so the
// ScaledObject author sees which of their queries failed.
type dimension int

const (
	dimReplicas dimension = iota
	dimActivation
	dimResource
	dimCPU
	dimMemory
	dimMemoryLimit
	dimWalState
	dimSplits
	dimTreeBytes
	dimTreeCeiling
	dimTreeSaturation
	dimPartitionAccount
	dimArrivals
	dimRunSeconds
	dimRuns
	dimReady
	dimRetrying
	dimDue
	dimBusy
	dimReserved
	dimReservationStart
	dimReservationEnd
	dimReservationSlots
	dimTimestamp
	numDimensions
)

var dimensionKeys = [numDimensions]string{
	"replicasQuery", "activationQuery", "resourceQuery", "cpuQuery", "memoryQuery",
	"memoryLimitQuery", "walStateQuery", "splitsInFlightQuery", "treeRetainedBytesQuery",
	"treeRetainedBytesCeilingQuery", "treeSaturationQuery", "partitionAccountQuery",
	"arrivalsQuery", "runSecondsQuery", "runsQuery", "readyQuery", "retryingQuery", "dueQuery",
	"busyQuery", "reservedQuery", "reservationStartQuery", "reservationEndQuery",
	"reservationSlotsQuery", "timestampQuery",
}

// Key is the metadata key a dimension's query is configured under.
func (d dimension) Key() string { return dimensionKeys[d] }

func (d dimension) storage() bool { return d >= dimTreeBytes && d <= dimPartitionAccount }

func (d dimension) queue() bool { return d >= dimArrivals && d <= dimReservationSlots }

// required is a dimension whose empty answer fails the sample under
// Options.FailOnEmpty: one the pressure itself is read from.
func (d dimension) required() bool { return d <= dimMemory }

// counter is a queue counter: read per replica, see foldQueue.
func (d dimension) counter() bool { return d >= dimArrivals && d <= dimRuns }

func (q Queries) byDimension() [numDimensions]string {
	return [numDimensions]string{
		q.Replicas, q.Activation, q.Resource, q.CPU, q.Memory, q.MemoryLimit, q.WalState,
		q.SplitsInFlight, q.TreeRetainedBytes, q.TreeRetainedBytesCeiling, q.TreeSaturation,
		q.PartitionAccount, q.Arrivals, q.RunSeconds, q.Runs, q.Ready, q.Retrying, q.Due,
		q.Busy, q.Reserved, q.ReservationStart, q.ReservationEnd, q.ReservationSlots,
		q.Timestamp,
	}
}

// perReplica is a dimension read per replica: every one but the storage
// queries, the queue gauges and the timestamp query (the set foldReplicas
// walks).
func (d dimension) perReplica() bool {
	return d != dimTimestamp && !d.storage() && (!d.queue() || d.counter())
}

// hasPerReplica says some per-replica query is set, so a replica can be read.
func (q Queries) hasPerReplica() bool {
	for d, x := range q.byDimension() {
		if x != "" && dimension(d).perReplica() {
			return true
		}
	}
	return false
}
