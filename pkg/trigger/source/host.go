package source

import (
	"log/slog"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// SourceHost is the source kind that reads the scaler's own machine.
const SourceHost = "host"

// Host is the host source kind: the scaler's own machine or container. It
// has no keys: it is the embedded default that makes a fresh start serve a
// real signal. Every source of the kind reads the host through one
// host.Reader, so the targets sampled at one instant read it once.
func Host() trigger.Kind {
	reader := host.NewReader(host.ReaderOptions{})
	return trigger.NewKind(SourceHost, "the scaler's own machine or container, cgroup v2 aware with a `/proc` fallback",
		func() struct{} { return struct{}{} }, nil, nil,
		func(struct{}) (trigger.SourceSpec, error) { return hostSpec{reader: reader}, nil })
}

type hostSpec struct{ reader *host.Reader }

func (hostSpec) Key() string { return SourceHost }

func (s hostSpec) New(*slog.Logger) (pressure.Source, error) {
	return host.New(host.Options{Reader: s.reader})
}
