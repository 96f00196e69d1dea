package signalapi

import (
	"context"
	"errors"
	"time"

	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signal"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errShutdown ends a stream with OK: the server, not the client or the
// target, went away.
var errShutdown = errors.New("server shutting down")

// Watch sends the target's current signal at once, then the signal after
// every sampling attempt. It follows snapshots, not a timer: one message per
// publish, and a reader that falls behind skips to the latest snapshot
// instead of queueing stale ones.
func (s *Server) Watch(req *barometerv1.WatchRequest, stream grpc.ServerStreamingServer[barometerv1.ScalingSignal]) error {
	select {
	case <-s.done:
		// A draining server refuses new streams so clients reconnect
		// elsewhere instead of spinning on instant clean ends.
		return status.Error(codes.Unavailable, "server is shutting down")
	default:
	}
	ns, name := req.GetNamespace(), req.GetName()
	served, err := s.resolve(ns, name)
	if err != nil {
		return err
	}
	snap := served.Target.Load()
	recheck := time.NewTicker(recheckEvery(snap))
	defer recheck.Stop()
	for {
		if err := stream.Send(s.convert(served, snap)); err != nil {
			return err
		}
		served, err = s.await(stream.Context(), ns, name, served, snap, recheck)
		switch {
		case errors.Is(err, errShutdown):
			return nil
		case err != nil:
			return err
		}
		snap = served.Target.Load()
	}
}

// await blocks until there is something new to send and returns what to
// read it from: served after its target publishes, or what now serves the
// ScaledObject if that changed (another target, or a new trigger). It asks the registry after every publish and
// on every recheck tick, because a ScaledObject whose settings changed moves
// to another target (the old one keeps publishing until it is reaped), and a
// reaped target never publishes again: a stream left on either would show a
// signal KEDA no longer uses, or freeze silently. A forgotten ScaledObject
// ends the stream with NOT_FOUND.
func (s *Server) await(ctx context.Context, ns, name string, served registry.Served, snap *sampling.Snapshot, recheck *time.Ticker) (registry.Served, error) {
	for {
		published := false
		select {
		case <-snap.Next():
			published = true
		case <-recheck.C:
		case <-ctx.Done():
			return registry.Served{}, status.FromContextError(ctx.Err()).Err()
		case <-s.done:
			return registry.Served{}, errShutdown
		}
		cur, err := s.resolve(ns, name)
		switch {
		case err != nil:
			return registry.Served{}, err
		case cur.Target != served.Target:
			recheck.Reset(recheckEvery(cur.Target.Load()))
			return cur, nil
		case published || cur.Trigger != served.Trigger:
			return cur, nil
		}
	}
}

// recheckEvery is the staleness horizon: by then a live target has
// published, so a stopped one is noticed no later than its signal would read
// stale anyway.
func recheckEvery(snap *sampling.Snapshot) time.Duration {
	if snap.Interval <= 0 {
		return 3 * signal.DefaultSampleInterval
	}
	return 3 * snap.Interval
}
