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
//   - exchange.go: scrapes shared between the Sources of a process: the
//     targets that name the same replica the same way (profile, namespace,
//     names, limits) and sample at the same instant take one scrape and one
//     parse between them, each under its own timeout, on the goroutine of
//     the Source that starts it;
//   - client.go: one HTTP scrape, with content negotiation (text or
//     delimited protobuf), a response-size limit and no redirects;
//   - body (a package of its own): the response read into one replica's
//     values: filtered to the families the contract reads, read into series,
//     with expfmt as the reference and the fallback for text;
//   - fold.go: the replicas' values become a pressure.Observation; a
//     response's work-queue series go to exposition.QueueFold, the fold the
//     prometheus source shares; the queue counters' per-replica readings are
//     kept between samples, so a replica that drops out does not make a
//     counter fall.
//
// Limits are explicit configuration (Options), never implicit: the number of
// concurrent scrapes, the per-scrape timeout, the response size.
package scrape
