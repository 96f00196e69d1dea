package target

import (
	"log/slog"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
)

// hostSpec reads the scaler's own machine or container. It has no keys: it
// is the embedded default that makes a fresh start serve a real signal.
type hostSpec struct{}

// ParseHost is the SourceParser of the host source.
func ParseHost(*Params) (SourceSpec, error) { return hostSpec{}, nil }

func (hostSpec) Key() string { return "host" }

func (hostSpec) New(*slog.Logger) (pressure.Source, error) {
	return host.New(host.Options{})
}
