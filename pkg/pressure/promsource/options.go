package promsource

import (
	"log/slog"
	"strconv"
	"syscall"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
)

// DefaultReplicaLabel is the default of Options.ReplicaLabel.
const DefaultReplicaLabel = "pod"

// The labels the storage queries are read by are the contract's
// (exposition.LabelTree, LabelPartition, LabelAccount). They are fixed,
// unlike the replica label, because PromQL's label_replace renames a label
// when a workload names them otherwise.

// maxPartitions bounds a partition index, so one bad label cannot make a
// sample allocate without limit. It is the scrape source's bound.
const maxPartitions = exposition.MaxPartitions

// Queries are the PromQL instant queries, one per dimension. An empty query
// is not run and its dimension reads as if it had returned no series.
type Queries struct {
	// Replicas lists the replicas: one series per replica, value > 0 when it
	// is up (for example `up{job="shop"}`). Empty: the replicas are those
	// the other per-replica queries name.
	Replicas string
	// Activation is each replica's working set (a count).
	Activation string
	// Resource is a ready-made utilisation per replica, 0..1. It replaces
	// CPU, Memory and MemoryLimit, which must then be empty.
	Resource string
	// CPU is each replica's CPU in use over its limit, 0..1.
	CPU string
	// Memory and MemoryLimit are each replica's memory in use and ceiling, in
	// bytes; a replica with no ceiling contributes CPU only.
	Memory      string
	MemoryLimit string
	// WalState is each replica's WAL saturation gauge: 0 Healthy,
	// 1 Throttled, 2 Saturated.
	WalState string
	// SplitsInFlight is each replica's split footprint. Its failure does not
	// fail the sample (see Observation.SplitsErr).
	SplitsInFlight string

	// TreeRetainedBytes, TreeRetainedBytesCeiling and TreeSaturation give one
	// series per WAL tree (label tree): retained bytes, their budget, and the
	// saturation gauge (0..2).
	TreeRetainedBytes        string
	TreeRetainedBytesCeiling string
	TreeSaturation           string
	// PartitionAccount gives one series per placed partition (labels tree,
	// partition = its index from 0, account = the storage account it is
	// on), value > 0 where the placement holds.
	PartitionAccount string

	// The work queue (see foldQueue), read raw: never wrap a counter in
	// rate(), the queue policy derives rates itself. Arrivals, RunSeconds
	// and Runs are counters, best one series per replica (label
	// ReplicaLabel) so that a replica that goes away is not read as a
	// counter restart. Ready and Retrying give the backlog by label class;
	// Due, Busy and Reserved are summed; ReservationStart, ReservationEnd
	// and ReservationSlots give one series per reservation (label id).
	Arrivals         string
	RunSeconds       string
	Runs             string
	Ready            string
	Retrying         string
	Due              string
	Busy             string
	Reserved         string
	ReservationStart string
	ReservationEnd   string
	ReservationSlots string

	// Timestamp answers, per series, the Unix time of the newest sample
	// behind the signal (timestamp(...) of a raw selector). It only tells
	// how old the data is (see DataTime): an instant query stamps every
	// sample with the evaluation instant, so the other answers cannot.
	Timestamp string
}

// DefaultQueries reads the exposition contract as Prometheus stores it,
// under the given metric names (exposition.DefaultNames, or renamed).
// selector is a list of label matchers (`job="shop",namespace="prod"`) put
// on every series, so a server that scrapes several workloads is read for
// one; empty means every series of those names.
//
// The queue counters are the raw series, one per replica and whatever else
// labels them; the fold sums them per replica. The gauges are summed in
// PromQL, the backlog by class; the reservations are joined by id as the
// scrape source joins them (earliest start, latest end, most slots). An end
// of 0 is open-ended and outlasts every end, which max by (id) alone cannot
// say (it would pick a closed end over it): ids whose smallest end is 0
// answer 0, the others their largest end. A
// classic histogram or a summary stores the run time as _sum and _count;
// for a native histogram set runSecondsQuery and runsQuery to
// histogram_sum(...) and histogram_count(...).
//
// The timestamp query is timestamp() of the raw working-set series, the
// one series every replica of the contract exposes: a Prometheus that has
// stopped scraping the workload then shows as old data, not as a calm
// workload.
//
// CPU is irate, the rate between the server's last two scrapes of the
// replica, as the scrape source computes it between its own two, over the
// CPU-limit gauge. A gauge that is not a finite number above 0 is filtered
// out (> 0 < +Inf) rather than divided by, so it reads as absent, as it
// does to the scrape source. cpuLimitCores > 0 stands in for the gauge on
// replicas that do not expose a usable one (PromQL's or adds exactly the
// series the left side lacks).
func DefaultQueries(names exposition.Names, selector string, cpuLimitCores float64) Queries {
	sel := func(name string) string {
		if selector == "" {
			return name
		}
		return name + "{" + selector + "}"
	}
	cpuRate := "irate(" + sel(names.CPUSeconds) + "[5m])"
	cpu := cpuRate + " / (" + sel(names.CPULimitCores) + " > 0 < +Inf)"
	if cpuLimitCores > 0 {
		cpu = "(" + cpu + ") or (" + cpuRate + " / " + strconv.FormatFloat(cpuLimitCores, 'g', -1, 64) + ")"
	}
	byID := func(agg, name string) string {
		return agg + " by (" + exposition.LabelReservation + ") (" + sel(name) + ")"
	}
	resEnd := byID("min", names.QueueReservationEnd) + " == 0 or " + byID("max", names.QueueReservationEnd)
	return Queries{
		Activation:               sel(names.Activations),
		CPU:                      cpu,
		Memory:                   sel(names.MemoryBytes),
		MemoryLimit:              sel(names.MemoryLimitBytes),
		WalState:                 sel(names.WalState),
		SplitsInFlight:           sel(names.SplitsInFlight),
		TreeRetainedBytes:        sel(names.TreeRetainedBytes),
		TreeRetainedBytesCeiling: sel(names.TreeRetainedBytesCeiling),
		TreeSaturation:           sel(names.TreeSaturationState),
		PartitionAccount:         sel(names.PartitionAccount),
		Arrivals:                 sel(names.QueueArrivals),
		RunSeconds:               sel(names.QueueRunDuration + exposition.SumSuffix),
		Runs:                     sel(names.QueueRunDuration + exposition.CountSuffix),
		Ready:                    "sum by (" + exposition.LabelClass + ") (" + sel(names.QueueReady) + ")",
		Retrying:                 "sum by (" + exposition.LabelClass + ") (" + sel(names.QueueRetrying) + ")",
		Due:                      "sum(" + sel(names.QueueDue) + ")",
		Busy:                     "sum(" + sel(names.QueueBusy) + ")",
		Reserved:                 "sum(" + sel(names.QueueReserved) + ")",
		ReservationStart:         byID("min", names.QueueReservationStart),
		ReservationEnd:           resEnd,
		ReservationSlots:         byID("max", names.QueueReservationSlots),
		Timestamp:                "timestamp(" + sel(names.Activations) + ")",
	}
}

// Options configure a Source.
type Options struct {
	// ServerAddress is the Prometheus server's base URL, e.g.
	// http://prometheus.monitoring.svc:9090 (a path prefix is kept).
	ServerAddress string
	Queries       Queries
	// ReplicaLabel tells the replicas apart; empty means DefaultReplicaLabel.
	ReplicaLabel string
	// QueryTimeout bounds one sample's queries (they run concurrently) and is
	// sent to the server as the evaluation timeout; a shorter ctx deadline
	// wins. Zero means the profile's time-out, else
	// promclient.DefaultQueryTimeout; a profile's time-out also caps it.
	QueryTimeout time.Duration
	// MaxResponseBytes bounds one query's response body; zero means
	// promclient.DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Control vets every address dialled (allow.List.Control): the
	// server's name was checked where the metadata named it, and this
	// checks what it resolves to, on every connection. Nil vets nothing.
	// With a Profile it is not used: the profile's own dialer vets with
	// the Control its Set was loaded with.
	Control func(network, address string, c syscall.RawConn) error
	// Profile is the connection profile the server is reached through
	// (connprofile.Set.Resolve): its credentials, TLS, tenant header and
	// redirect policy. Its time-out is the default and the ceiling of
	// QueryTimeout. Nil: a plain client, no redirects.
	Profile *connprofile.Profile
	// QueryParameters are added to every query's URL, as KEDA's
	// queryParameters are (Thanos' dedup or partial_response, say). The
	// parameters the query API itself sends cannot be set.
	QueryParameters map[string]string
	// CustomHeaders are sent with every query, as KEDA's customHeaders
	// are. They are not secret: they come from the ScaledObject, so they
	// may be shown wherever it is; credentials belong in a Profile.
	// Headers that carry credentials or shape the connection
	// (prometheus/common's config.ReservedHeaders) cannot be set, nor the
	// profile's tenant header, which would let a trigger pick a tenant.
	CustomHeaders map[string]string
	// FailOnEmpty fails a sample in which the replicas, activation,
	// resource, cpu or memory query returns no series: KEDA's
	// ignoreNullValues set to false. The default (false, KEDA's default
	// true) reads an empty answer as docs/prometheus.md says, and still
	// fails a sample that finds no replica at all.
	FailOnEmpty bool
	// Align, when > 0, evaluates each sample's queries at the instant
	// truncated to a multiple of Align (the sample interval), less a
	// margin of at most a second (alignMargin): scaler replicas whose
	// samplers are aligned to the same multiples then ask Prometheus about
	// the same instant and read identical data.
	Align time.Duration
	// Pool is shared by the sources of the process: it bounds the queries
	// in flight to each server and asks identical queries of the same
	// instant once for all (see querypool.Pool). Nil: a Pool of the
	// source's own.
	Pool *querypool.Pool
	// Now is the evaluation instant of each sample; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}
