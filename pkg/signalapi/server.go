package signalapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signalview"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Registry is what the server reads from *registry.Registry.
type Registry interface {
	// Default returns the default target and its trigger; false when
	// none is set.
	Default() (registry.Served, bool)
	// Serving returns the target serving a ScaledObject and its trigger;
	// an error wrapping registry.ErrUnknownRef when none does.
	Serving(ref registry.Ref) (registry.Served, error)
	// Now is the registry's clock, by which staleness is judged.
	Now() time.Time
}

// Server implements barometerv1.SignalServiceServer.
type Server struct {
	barometerv1.UnimplementedSignalServiceServer

	reg Registry

	shutdownOnce sync.Once
	done         chan struct{}
}

var (
	_ barometerv1.SignalServiceServer = (*Server)(nil)
	_ Registry                        = (*registry.Registry)(nil)
)

// NewServer returns a server reading reg; staleness is judged by reg's
// clock.
func NewServer(reg Registry) *Server {
	return &Server{reg: reg, done: make(chan struct{})}
}

// Shutdown ends every open Watch stream with OK and refuses new ones with
// UNAVAILABLE. Call it before grpc.Server.GracefulStop, which otherwise waits
// for the streams forever. Safe to call more than once.
func (s *Server) Shutdown() {
	s.shutdownOnce.Do(func() { close(s.done) })
}

// Get returns the current signal of one target.
func (s *Server) Get(_ context.Context, req *barometerv1.GetRequest) (*barometerv1.ScalingSignal, error) {
	served, err := s.resolve(req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, err
	}
	return s.convert(served, served.Target.Load()), nil
}

// convert renders a snapshot for the reader's trigger, with the facts Get
// and Watch add to the signal.
func (s *Server) convert(served registry.Served, snap *sampling.Snapshot) *barometerv1.ScalingSignal {
	v := signalview.ForTrigger(&snap.Signal, served.Target.Key, nil, served.Trigger)
	v.Stale = snap.Stale(s.reg.Now())
	return ToProto(&v)
}

// resolve finds the target a request names and maps failures to the status
// a client can act on.
func (s *Server) resolve(namespace, name string) (registry.Served, error) {
	switch {
	case namespace == "" && name == "":
		if served, ok := s.reg.Default(); ok {
			return served, nil
		}
		return registry.Served{}, status.Error(codes.Unavailable, "no default target is configured; name a ScaledObject (namespace and name)")
	case namespace == "" || name == "":
		return registry.Served{}, status.Errorf(codes.InvalidArgument,
			"namespace %q and name %q: give both to name a ScaledObject, or neither for the default target", namespace, name)
	}
	ref := registry.Ref{Namespace: namespace, Name: name}
	served, err := s.reg.Serving(ref)
	switch {
	case errors.Is(err, registry.ErrUnknownRef):
		return registry.Served{}, status.Errorf(codes.NotFound,
			"no target serves ScaledObject %s: KEDA has not asked the scaler about it, or stopped asking long enough ago that its sampler was stopped", ref)
	case err != nil:
		return registry.Served{}, status.Errorf(codes.Internal, "look up ScaledObject %s: %v", ref, err)
	}
	return served, nil
}
