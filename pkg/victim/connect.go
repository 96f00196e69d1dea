package victim

import (
	"context"
	"errors"
	"log/slog"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/kube"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// Connect builds the scaler's one Kubernetes discovery, shared by every
// k8s:// target, and the hints' writer when hints is set (nil otherwise).
// Without a configuration the scaler still serves every other target, and
// refuses k8s:// ones saying why; a kubeconfig that is set but unreadable
// is refused the same way and logged, never its contents.
func Connect(kubeconfig string, hints bool, logger *slog.Logger) (scrape.Kube, *Writer) {
	client, err := kube.Connect(kubeconfig)
	if err != nil {
		if !errors.Is(err, kube.ErrNoConfig) {
			logger.Warn("Kubernetes unavailable: k8s:// targets are refused", "err", err)
		}
		return scrape.Kube{Unavailable: err}, nil
	}
	k := scrape.Kube{Discovery: kube.NewDiscovery(client), Hints: hints}
	if !hints {
		return k, nil
	}
	return k, &Writer{New(kube.NewPatcher(client))}
}

// Writer gives each target that asks for victim hints its ranker.
type Writer struct{ *Hints }

// After is the registry's After: nil (nothing to consume) for a target
// without hints, and on a nil writer (hints off, where the schema refuses
// them anyway).
func (w *Writer) After(tr *trigger.Spec) func(context.Context, pressure.Observation, signal.Input) {
	ns, on := tr.VictimHints()
	if w == nil || !on {
		return nil
	}
	return w.For(ns, !tr.Policy.Replicas()).Sample
}
