// Package body reads one scrape response's body into what the pressure
// exposition contract (package exposition, docs/exposition.md) says about
// one replica. It does no I/O: the scrape package fetches the body and
// hands it here, as Prometheus' scrape loop hands a body to its parser.
//
//   - filter.go: the body is first cut down to the families the contract
//     reads (text lines or delimited protobuf messages);
//   - textparse.go, protoparse.go and series.go: the kept families are read
//     into series (only what the contract looks at: family, value, sum and
//     count, five labels). Text the plain reader does not take (histogram or
//     summary families, quoted names, anything it would refuse) goes to
//     prometheus/common/expfmt, which stays the reference both readers are
//     fuzzed against;
//   - parse.go and queue.go: the series become one replica's Sample, which
//     feeds the storage and queue folds the prometheus source shares.
package body
