// Package promsource is a pressure.Source that asks a Prometheus server,
// which already scrapes the workload, instead of scraping the replicas itself.
//
// Each sample evaluates one PromQL instant query per dimension, all at the
// same instant, through a promclient.Client: asked together as one query
// (see dimLabel), each dimension reading exactly the series its own query
// returns, and alone for a dimension whose query fails combined. The path
// of one sample's queries is query.go. The sources of a process share a
// querypool.Pool, which bounds the queries in flight to each server, sends
// a query only with the time left to answer it, and asks identical queries
// of the same instant once for all the targets asking them.
//
// The answers are folded as the scrape source folds what it scrapes: the
// per-replica series into one pressure.ReplicaObservation per value of the
// replica label (foldReplicas), the storage series into trees (foldTrees)
// and the queue series by the scrape source's queue rules (foldQueue).
//
// The past is read with range queries of the same combined query, folded
// step by step (range.go): a starting sampler's backfill in one query
// (ObservePast, pressure.HistorySource), and the seasonal forecast's
// history (ObserveSeason, pressure.SeasonSource), whose reads
// seasonread schedules. The only state the source keeps between samples
// is the queue counters' last readings (see foldQueue) and that schedule
// with the history it read; everything else is read afresh.
//
// The kind (the keys a trigger is written in) is promkind's. What the
// answers mean to a user (which replicas there are, how old the data is,
// what an empty answer reads as, what fails a sample) is written in
// docs/prometheus.md; the code follows it.
package promsource
