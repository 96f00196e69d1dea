// Package scrape is a pressure.Source that reads the pressure exposition
// contract (package exposition, docs/exposition.md) straight from the
// workload's replicas over HTTP, the way a Prometheus server scrapes them.
//
// Like Prometheus' own scrape package, the parts are kept apart:
//
//   - target.go: the configured targets, and their expansion on every sample
//     (a "dns+http://" target becomes one replica per A/AAAA record, each
//     vetted by the allow-list, and none for a name without records: a
//     Service scaled to zero); an endpoint several targets reach is one
//     replica;
//   - pool.go: the sample's lifecycle: a bounded set of workers, each scrape
//     under its own timeout inside the sample's deadline, and the per-replica
//     state (CPU counter marks, error counts) kept between samples;
//   - client.go: one HTTP scrape, with content negotiation (text or
//     delimited protobuf), a response-size limit and no redirects;
//   - filter.go, textparse.go, protoparse.go, series.go and parse.go: the
//     response is first cut down to the families the contract reads, then
//     read into series (only what the contract looks at: family, value,
//     sum and count, five labels) and into one replica's values. Text the
//     plain reader does not take (histogram or summary families, quoted
//     names, anything it would refuse) goes to prometheus/common/expfmt,
//     which stays the reference both readers are fuzzed against;
//   - queue.go: a response's work-queue series, read into series that
//     fold.go hands to exposition.QueueFold, the fold the prometheus source
//     shares; the queue counters' per-replica readings are kept between
//     samples, so a replica that drops out does not make a counter fall;
//   - fold.go: the replicas' values become a pressure.Observation.
//
// Limits are explicit configuration (Options), never implicit: the number of
// concurrent scrapes, the per-scrape timeout, the response size.
package scrape
