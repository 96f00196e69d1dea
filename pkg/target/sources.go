package target

import (
	"log/slog"
	"slices"

	"github.com/barometer-scaler/barometer/pkg/pressure"
)

// SourceSpec is a source's typed configuration, parsed from metadata.
type SourceSpec interface {
	// Key identifies the configuration: equal keys share one sampler.
	Key() string
	// New builds the source.
	New(logger *slog.Logger) (pressure.Source, error)
}

// SourceParser reads a source's own keys from the metadata. It returns a
// *MetadataError naming the key for anything invalid.
type SourceParser func(p *Params) (SourceSpec, error)

// Sources is the set of source kinds a server offers, by name.
type Sources struct {
	parsers map[string]SourceParser
}

// NewSources returns an empty set; Register adds kinds.
func NewSources() *Sources { return &Sources{parsers: map[string]SourceParser{}} }

// Register offers a source kind under name.
func (s *Sources) Register(name string, parse SourceParser) { s.parsers[name] = parse }

func (s *Sources) names() []string {
	names := make([]string, 0, len(s.parsers))
	for n := range s.parsers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (s *Sources) parse(kind string, p *Params) (SourceSpec, error) {
	return s.parsers[kind](p)
}
