// Package promsource is a pressure.Source that asks a Prometheus server,
// which already scrapes the workload, instead of scraping the replicas itself.
//
// Each sample evaluates one PromQL instant query per dimension, all at the
// same instant, through client_golang's api package: asked together as one
// query (see dimLabel), each dimension reading exactly the series its own
// query returns, and alone for a dimension whose query fails combined. The
// sources of a process share a querypool.Pool, which bounds the queries in flight to
// each server (past the bound a query waits its turn) and asks identical
// queries of the same instant once for all the targets asking them.
// Every per-replica query must return an instant vector with one series per
// replica, told apart by the replica label (pod by default): the series are
// folded into one pressure.ReplicaObservation per label value, exactly as the
// scrape source folds one per scraped replica: several series for one replica
// in one query add up where they are counts (working set, memory, memory
// limit, splits), as the series of one exposition do, keep the worst where
// they are states (WAL), and keep the largest where they are ratios (CPU,
// resource), which do not add. Aggregate by the replica label in PromQL
// (`max by (pod) (...)`) where that is not what the series mean, for
// instance when two jobs scrape the same pod.
//
// # Which replicas there are
//
// With a replicas query, its series are the replicas: a value above 0 (an
// `up` of 1) is a live replica, 0 or NaN is a replica that is down and is
// named in Observation.Missing, and series of other queries for replicas it
// does not list are ignored. Without one, the replicas are every label value
// any per-replica query returned.
//
// # Reaching the server
//
// Without a profile the server is reached by a plain client that follows
// no redirect. With Options.Profile (pkg/pressure/connprofile) the profile's
// shared transport carries its credentials, TLS and tenant header, re-read
// as the Secret behind them rotates; a 401 or 403 answer names the profile
// whose credentials were refused, and so does a failed TLS handshake. A
// profile follows no redirect either, unless it sets follow_redirects, and
// then only to a server the profile may be used with. Options.QueryParameters and
// Options.CustomHeaders are a trigger's own additions (KEDA's
// queryParameters and customHeaders); nothing a trigger adds can replace
// the profile's credentials or tenant.
//
// # How old the data is
//
// An instant query stamps every sample with the evaluation instant, so its
// answers say nothing of when the data was scraped. The timestamp query
// (timestamp() of the raw working-set series by default) does: DataTime is
// its newest value, and the evaluation instant minus DataTime is the
// data's age, which grows when Prometheus stops scraping the workload
// (until the series go stale, five minutes later by default, and the
// sample has no replicas).
//
// # What an empty result means
//
// A query that returns no series is not an error; it is read as follows.
// This is KEDA's ignoreNullValues: true, its default. Options.FailOnEmpty
// (ignoreNullValues: false) instead fails the sample when the replicas,
// activation, resource, cpu or memory query returns nothing, so the
// previous signal stands and goes stale instead of reading as an idle
// workload; the other dimensions keep the readings below, since an empty
// answer is their normal state (no split in flight, no reservation, no
// storage series).
//
//   - activation, resource, cpu, memory: no replica reports the dimension;
//     each replica reads 0 there.
//   - memoryLimit: no replica reports a memory ceiling; resource is CPU only.
//     The same holds for one replica missing from the result.
//   - walState: every replica is Healthy.
//   - splitsInFlight: no replica reports a split footprint (HasSplits is
//     false), so footprints already seen expire by their TTL.
//   - replicas: there are no replicas.
//   - no replicas at all, from the replicas query or from every per-replica
//     query: the sample fails with an error saying so ("no replicas"), and
//     the previous signal stands. So does a sample whose replicas are all
//     down. The exception is a workload scaled to zero whose queue is still
//     read (queue series that name no replica, a scheduler's for instance):
//     the sample is that queue with zero replicas and nothing missing, so a
//     queue policy can scale up from zero.
//   - storage (tree retained bytes, ceiling, saturation, partition
//     placement): a tree missing from one of them reads 0 bytes, no ceiling
//     (it adds neither bytes nor budget), Healthy, or no partitions (it is
//     charged to no account). A partition index missing between others is
//     charged to no account. When every storage query returns nothing there
//     is no storage view (Observation.Trees is nil), as with a scraped
//     workload that exposes no storage series.
//   - queue (arrivals, run seconds, runs, ready, retrying, due, busy,
//     reserved, reservations): a part no query returns reads 0, or no
//     reservation; when every queue query returns nothing there is no queue
//     view (Observation.Queue is nil), as with a scraped workload that
//     exposes no queue series.
//
// # The queue
//
// The queue queries are read with the scrape source's rules
// (exposition.QueueFold; see foldQueue), so one workload read both ways has
// one queue. The default reservation end query answers 0 (open-ended) for
// an id any series holds open, since max by (id) alone would let a closed
// end win over it. The counters are the only state the source keeps between
// samples: each replica's last reading, so that a replica that goes away
// does not make the summed counter fall (which the queue policy would read
// as a restart, and the whole sum as new work). Counter series that carry
// the replica label also name replicas, as per-replica queries do.
//
// # The seasonal forecast's history
//
// With the trigger's forecast on (or only), the sampler reads the history
// the seasonal forecast needs from the source (ObserveSeason, a
// pressure.SeasonSource), and the computer keeps none of its own: the
// history is what Prometheus already stores. It is read with the sample's
// own compute queries (replicas, activation, resource, cpu, memory,
// memoryLimit, walState), combined as a sample's are, as range queries on
// the 5-minute grid (pressure.SeasonStep), each step folded as a sample
// is and reduced to raw demand by the trigger's collector. A step where no
// replica can be read has no point. Three windows are read every 5
// minutes: the last 30 minutes (the current level) and, one day and one
// week ago, from 30 minutes before the instant to 90 minutes after it
// (the forecast's hour-wide window, up to an hour ahead). Once an hour the
// last eight days are read, a day per query (so no answer is larger than
// a day's), and the computer finds the period in them. Between those
// reads the source keeps the three windows' points (56 of them, 1.8 KiB)
// and answers from them; a read that fails is not asked again before the
// next 5 minutes (or hour), and the sample stands on its measurement.
// Each history's reads move at a phase of their own within the 5 minutes
// and the hour (a hash of the server and the query), so many targets do
// not all ask at the same instant; the targets with the same queries have
// the same phase and share each read through the pool, as they share
// their samples' queries.
//
// # What fails a sample
//
// A query error (the server refused it, it timed out, the response was too
// large or not an instant vector) or a series without its label fails the
// whole sample: Observe returns the error and the previous signal stands.
// The splits query is the exception: it fails open, setting
// Observation.SplitsErr so the split probe logs, counts and reports no split
// in flight; so does a split footprint that is negative or not finite, for
// that replica. A WAL state outside 0..2 leaves that one replica out, named
// in Missing, as a scraped replica that answered garbage would be. A tree's
// unreadable value (saturation outside 0..2, a partition label that is not
// an index) fails the sample, since there is no missing tree to name. So
// does a reservation series without its id label. A queue value that is not
// a finite number >= 0 is left out, as if absent.
package promsource
