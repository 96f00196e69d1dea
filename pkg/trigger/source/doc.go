// Package source holds the trigger sources' metadata: the source kinds a
// trigger's `source` key names, each declared once as a trigger.Kind with
// its own typed configuration and keys (keyschema declarations), so the
// parser, the errors, the README's tables and the simulator's flags all
// read the one declaration.
//
//   - host.go: Host, the scaler's own machine or container (no keys; the
//     default source);
//   - scrape.go: Scrape, the replicas' exposition read straight from them
//     (targets, k8s:// discovery through Kube, victim hints);
//   - prometheus.go: Prometheus, a Prometheus server that already scrapes
//     the workload (one PromQL query per dimension, defaults built from the
//     contract's names);
//   - otlp.go: OTLP, what the replicas push to the scaler's OTLP receiver;
//   - common.go: the keys and helpers several kinds share (the contract's
//     metric names, cpuLimitCores, connectionProfile, name=value pairs).
//
// A trigger parsed against a schema of these kinds (trigger.NewSchema)
// carries its source's trigger.SourceSpec: the configuration with every
// default resolved and every check between keys passed. Its Key says which
// triggers mean the same source, and its New builds the pressure.Source
// (package host, scrape, promsource or otlp) the registry samples, sharing
// what the kind shares between its sources (one host reader, one scrape
// exchange, one query pool, the scaler's one OTLP store).
//
// Data flows one way: this package imports pkg/trigger (the schema, the
// keys every trigger has, Parse, the Trigger), and pkg/trigger never
// imports it; cmd/scaler offers the kinds to the schema it serves.
package source
