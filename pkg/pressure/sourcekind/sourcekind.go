// Package sourcekind declares what a trigger's `source` key can name: a
// kind of pressure source, its own keys, and how its parsed configuration
// becomes a Spec that builds the source.
//
// Each source package declares its kind next to its code (host.Kind,
// scrape.Kind, otlp.Kind; the prometheus source's in its subpackage,
// promkind.Kind); pkg/trigger's schema is built
// from the kinds cmd/scaler wires. This package imports only the key
// schema and pkg/pressure, so a source depends on nothing above it.
package sourcekind

import (
	"log/slog"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// Spec is a source's parsed configuration: every default resolved and
// every check between keys passed.
type Spec interface {
	// Key identifies the configuration: equal keys mean the same source.
	Key() string
	// New builds the source.
	New(logger *slog.Logger) (pressure.Source, error)
}

// Kind is a source kind. Declare one with New.
type Kind struct {
	Name string
	Doc  string
	keys []keyschema.Info
	// parse reads the kind's keys, checks them and builds the spec;
	// texts are the canonical values of its sampled keys.
	parse func(r *keyschema.Reading) (spec Spec, texts []string, err error)
}

// Keys describes the kind's own keys.
func (k Kind) Keys() []keyschema.Info { return k.keys }

// Parse reads the kind's keys from r and builds its spec; texts are the
// canonical values of the sampled keys, which enter the trigger's
// identity.
func (k Kind) Parse(r *keyschema.Reading) (spec Spec, texts []string, err error) {
	return k.parse(r)
}

// New declares a source kind whose configuration is a C: zero is its
// starting value, keys fill it, checks relate its keys, and build turns it
// into the spec the registry starts.
func New[C any](name, doc string, zero func() C, keys []keyschema.Key[C], checks []keyschema.Check[C], build func(C) (Spec, error)) Kind {
	infos := make([]keyschema.Info, len(keys))
	for i, k := range keys {
		infos[i] = k.Info
		infos[i].Sources = []string{name}
	}
	return Kind{Name: name, Doc: doc, keys: infos, parse: func(r *keyschema.Reading) (Spec, []string, error) {
		cfg := zero()
		texts, err := keyschema.Apply(r, keys, checks, &cfg)
		if err != nil {
			return nil, nil, err
		}
		spec, err := build(cfg)
		return spec, texts, err
	}}
}

// KeyCPULimitCores is the CPU limit of replicas that expose none.
const KeyCPULimitCores = "cpuLimitCores"

// CPULimitCoresKey declares cpuLimitCores, read by the scrape, prometheus
// and otlp sources alike.
func CPULimitCoresKey[C any](f keyschema.Field[C, float64]) keyschema.Key[C] {
	return keyschema.Float(KeyCPULimitCores, f, 0, keyschema.Between(0, 1e4)).
		Describe("CPU limit for replicas that do not expose `barometer_cpu_limit_cores` (or expose 0)")
}
