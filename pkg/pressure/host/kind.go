package host

import (
	"log/slog"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
)

// KindName is the source kind that reads the scaler's own machine.
const KindName = "host"

// Host is the host source kind: the scaler's own machine or container. It
// has no keys: it is the embedded default that makes a fresh start serve a
// real signal. Every source of the kind reads the host through one
// Reader, so the targets sampled at one instant read it once.
func Kind() sourcekind.Kind {
	reader := NewReader(ReaderOptions{})
	return sourcekind.New(KindName, "the scaler's own machine or container, cgroup v2 aware with a `/proc` fallback",
		func() struct{} { return struct{}{} }, nil, nil,
		func(struct{}) (sourcekind.Spec, error) { return hostSpec{reader: reader}, nil })
}

type hostSpec struct{ reader *Reader }

func (hostSpec) Key() string { return KindName }

func (s hostSpec) New(*slog.Logger) (pressure.Source, error) {
	return New(Options{Reader: s.reader})
}
