// Package parsecompare benchmarks Prometheus' own exposition parsers
// (model/textparse) on the bodies the scrape body reader's BenchmarkParse
// parses (testdata, one replica of bench/scrape.sh's fleet in each format),
// so the two can be set side by side: bench/parse.sh runs both.
//
// It is a module of its own because the Prometheus module cannot join
// Barometer's: the KEDA version Barometer builds against needs Prometheus
// v0.314 or later, and that raises versions Barometer pins for its binary
// (github.com/oklog/run among them). Nothing here is built into the scaler.
package parsecompare
