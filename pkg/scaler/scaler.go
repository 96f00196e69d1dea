// Package scaler is the KEDA external scaler: the gRPC ExternalScaler
// service of KEDA's generated externalscaler package, answered from cached
// signal snapshots.
package scaler

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/barometer-scaler/barometer/pkg/health"
	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// DefaultWarmUpWait is how long GetMetrics waits for a new target's first
// sample before it answers Unavailable: room for a scrape target's first
// sample, which reads its replicas twice (scrape.DefaultPrimeDelay apart).
// KEDA's HPA path runs under a ~3 s deadline, so this stays inside it.
const DefaultWarmUpWait = 2 * time.Second

// Server implements externalscaler.ExternalScalerServer. Every answer reads
// a cached snapshot; the only wait is a new target's first sample, bounded
// by WarmUpWait. Safe for concurrent use.
type Server struct {
	externalscaler.UnimplementedExternalScalerServer

	reg          *registry.Registry
	warmUpWait   time.Duration
	logger       *slog.Logger
	shutdown     chan struct{}
	shutdownOnce sync.Once
}

// Config wires a Server.
type Config struct {
	Registry   *registry.Registry
	WarmUpWait time.Duration
	Logger     *slog.Logger
}

// New returns a server over the registry's targets.
func New(cfg Config) *Server {
	if cfg.WarmUpWait <= 0 {
		cfg.WarmUpWait = DefaultWarmUpWait
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{reg: cfg.Registry, warmUpWait: cfg.WarmUpWait, logger: cfg.Logger, shutdown: make(chan struct{})}
}

// Shutdown ends every open stream cleanly (status OK), so KEDA reconnects
// without growing its backoff. Call it before grpc.Server.GracefulStop,
// which otherwise waits for streams forever.
func (s *Server) Shutdown() {
	s.shutdownOnce.Do(func() { close(s.shutdown) })
}

// resolve returns a ScaledObject's target and parsed trigger: a lookup
// when the ScaledObject sent the same metadata before.
func (s *Server) resolve(ref *externalscaler.ScaledObjectRef) (*registry.Target, *trigger.Trigger, error) {
	if ref == nil {
		return nil, nil, status.Error(codes.InvalidArgument, "scaledObjectRef is required")
	}
	if err := validRef(ref); err != nil {
		return nil, nil, err
	}
	t, tr, err := s.reg.Resolve(registry.Ref{Namespace: ref.GetNamespace(), Name: ref.GetName()}, ref.GetScalerMetadata())
	if err == nil {
		return t, tr, nil
	}
	return nil, tr, resolveError(tr, err)
}

// refused reports an error the spec calls must return: invalid metadata,
// or a limit. Any other failure (a source that cannot be built) still has a
// spec, and GetMetrics reports it.
func refused(err error) bool {
	c := status.Code(err)
	return c == codes.InvalidArgument || c == codes.ResourceExhausted
}

// resolveError maps a failed Resolve to its status. It is a function of its
// own so that the call that succeeds allocates nothing for it.
func resolveError(tr *trigger.Trigger, err error) error {
	var (
		me *keyschema.MetadataError
		le *registry.LimitError
	)
	switch {
	case errors.As(err, &le):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.As(err, &me):
		// Invalid metadata, or metadata that is valid alone but not beside
		// the running targets (a pool member whose options disagree with
		// the pool's).
		return status.Error(codes.InvalidArgument, err.Error())
	case tr == nil:
		return status.Error(codes.InvalidArgument, err.Error())
	}
	// The metadata parsed, but its source could not be built (for example
	// an unreadable host): a configuration problem of the scaler, not
	// something KEDA's retry will fix.
	return status.Error(codes.FailedPrecondition, err.Error())
}

// spec is the metric KEDA reads. For a policy that decides a replica count,
// TargetPressure is 1, so with AverageValue the HPA asks for
// ceil(count / 1): exactly the count.
func spec(md *trigger.Trigger) *externalscaler.GetMetricSpecResponse {
	return &externalscaler.GetMetricSpecResponse{MetricSpecs: []*externalscaler.MetricSpec{{
		MetricName:      md.MetricName,
		TargetSizeFloat: md.TargetPressure,
		// The deprecated integer field, for clients that predate floats:
		// the nearest whole number, never 0 (0 means "unset" to KEDA).
		TargetSize: max(1, int64(math.Round(md.TargetPressure))),
	}}}
}

// GetMetricSpec fails only for invalid metadata or a limit: KEDA counts its failures
// nowhere, so a sampling problem here would silently stall the ScaledObject.
// It starts the target's sampler so the first GetMetrics finds a sample.
func (s *Server) GetMetricSpec(_ context.Context, ref *externalscaler.ScaledObjectRef) (*externalscaler.GetMetricSpecResponse, error) {
	_, md, err := s.resolve(ref)
	if refused(err) {
		return nil, err
	}
	if err != nil {
		s.logger.Warn("target not started; GetMetrics will report it", "scaledObject", ref.GetNamespace()+"/"+ref.GetName(), "err", err)
	}
	return spec(md), nil
}

// GetMetrics answers the current ScaleValue (a policy's desired replica
// count), or Unavailable while warming up
// or stale so that KEDA's fallback counts the failure instead of acting on a
// made-up zero.
func (s *Server) GetMetrics(ctx context.Context, req *externalscaler.GetMetricsRequest) (*externalscaler.GetMetricsResponse, error) {
	t, md, err := s.resolve(req.GetScaledObjectRef())
	if err != nil {
		return nil, err
	}
	if name := req.GetMetricName(); name != "" && name != md.MetricName {
		return nil, status.Errorf(codes.InvalidArgument, "metric %s is not served for this ScaledObject (its metricName is %q)", keyschema.Quote(name), md.MetricName)
	}
	snap, err := s.current(ctx, t)
	if err != nil {
		return nil, err
	}
	return metricsReply(md.MetricName, snap.Signal.ScaleValue), nil
}

// reply is a GetMetrics answer in one allocation: the response, its one
// value and the slice that holds it.
type reply struct {
	resp   externalscaler.GetMetricsResponse
	values [1]*externalscaler.MetricValue
	value  externalscaler.MetricValue
}

// metricsReply answers value for the metric name. The deprecated integer
// field is the nearest whole number, for clients that predate floats.
func metricsReply(name string, value float64) *externalscaler.GetMetricsResponse {
	r := &reply{}
	r.value.MetricName = name
	r.value.MetricValueFloat = value
	r.value.MetricValue = int64(math.Round(value))
	r.values[0] = &r.value
	r.resp.MetricValues = r.values[:]
	return &r.resp
}

// IsActive reports ScaleValue > activationValue (for a policy: its desired
// count > activationValue).
func (s *Server) IsActive(ctx context.Context, ref *externalscaler.ScaledObjectRef) (*externalscaler.IsActiveResponse, error) {
	t, md, err := s.resolve(ref)
	if err != nil {
		return nil, err
	}
	snap, err := s.current(ctx, t)
	if err != nil {
		return nil, err
	}
	return &externalscaler.IsActiveResponse{Result: snap.Signal.ScaleValue > md.ActivationValue}, nil
}

// current returns a usable snapshot: it waits briefly for a first sample and
// refuses a stale one.
func (s *Server) current(ctx context.Context, t *registry.Target) (*sampling.Snapshot, error) {
	snap := t.WaitFirst(ctx, s.warmUpWait)
	return snap, usable(snap, s.reg.Now())
}

// usable refuses, as Unavailable, a signal that is warming up or stale, so
// KEDA's fallback counts the failure instead of acting on a made-up zero.
func usable(snap *sampling.Snapshot, now time.Time) error {
	if err := health.Fresh(snap, now); err != nil {
		return status.Error(codes.Unavailable, err.Error())
	}
	return nil
}

// StreamIsActive sends the activity once a usable signal exists, then only
// when it changes: KEDA restarts its cooldown on every true it receives. A
// stale signal sends nothing (KEDA ignores false anyway). The stream ends
// with the client's context, or cleanly (OK) on Shutdown.
func (s *Server) StreamIsActive(ref *externalscaler.ScaledObjectRef, stream externalscaler.ExternalScaler_StreamIsActiveServer) error {
	t, md, err := s.resolve(ref)
	if err != nil {
		return err
	}
	defer s.reg.Hold(t)()
	ctx := stream.Context()
	sent, last := false, false
	for {
		snap := t.Load()
		s.reg.Touch(t)
		if usable(snap, s.reg.Now()) == nil {
			active := snap.Signal.ScaleValue > md.ActivationValue
			if !sent || active != last {
				if err := stream.Send(&externalscaler.IsActiveResponse{Result: active}); err != nil {
					return err
				}
				sent, last = true, active
			}
		}
		select {
		case <-snap.Next():
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.shutdown:
			return nil
		}
	}
}

// StreamMetricSpec sends the spec at once. The spec is a function of the
// metadata, which is fixed for the life of a stream, so there is never a
// change to push; the stream stays open until the client or Shutdown ends
// it, and never sends an empty update.
func (s *Server) StreamMetricSpec(ref *externalscaler.ScaledObjectRef, stream externalscaler.ExternalScaler_StreamMetricSpecServer) error {
	_, md, err := s.resolve(ref)
	if refused(err) {
		return err
	}
	if err := stream.Send(spec(md)); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
		return status.FromContextError(stream.Context().Err()).Err()
	case <-s.shutdown:
		return nil
	}
}

// validRef refuses, as InvalidArgument, a name or namespace Kubernetes
// would not accept: a ScaledObject's name is a DNS subdomain (RFC 1123, at
// most 253 bytes), its namespace a DNS label (at most 63). KEDA never sends
// anything else, and a name kept by the registry must be bounded. It runs
// on every call, so it reads the bytes itself: a regular expression was a
// third of a GetMetrics.
func validRef(ref *externalscaler.ScaledObjectRef) error {
	if ns := ref.GetNamespace(); len(ns) > 63 || !dnsLabel(ns) {
		return status.Errorf(codes.InvalidArgument, "scaledObjectRef.namespace %s: a Kubernetes namespace: lower-case letters, digits and '-', at most 63 bytes", keyschema.Quote(ns))
	}
	if n := ref.GetName(); len(n) > 253 || !dnsSubdomain(n) {
		return status.Errorf(codes.InvalidArgument, "scaledObjectRef.name %s: a Kubernetes object name: lower-case letters, digits, '-' and '.', at most 253 bytes", keyschema.Quote(n))
	}
	return nil
}

// dnsLabel reports whether s is an RFC 1123 label: lower-case letters,
// digits and '-', not empty, starting and ending with a letter or digit.
func dnsLabel(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// dnsSubdomain reports whether s is RFC 1123 labels joined by '.'.
func dnsSubdomain(s string) bool {
	for {
		label, rest, more := strings.Cut(s, ".")
		if !dnsLabel(label) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}
