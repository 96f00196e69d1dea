// Package grpcstop ends a gRPC server's open streams at shutdown. A
// graceful stop waits for every stream handler to return, and some never do
// on their own: the standard health service's Watch and the reflection
// service hold their streams for as long as the client does. Streams lets
// the server end them, cleanly (status OK), so that a stop takes as long as
// the calls in flight and no longer.
package grpcstop

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// Streams ends the streams it intercepts when End is called. Safe for
// concurrent use.
type Streams struct {
	ended context.Context
	end   context.CancelFunc
}

// New returns a Streams whose End has not been called.
func New() *Streams {
	ctx, cancel := context.WithCancel(context.Background())
	return &Streams{ended: ctx, end: cancel}
}

// End ends every stream open now, and any opened later, with status OK.
func (s *Streams) End() { s.end() }

// ServerOption installs the interceptor on a server.
func (s *Streams) ServerOption() grpc.ServerOption { return grpc.ChainStreamInterceptor(s.intercept) }

// intercept gives the handler a context that End cancels. A handler that
// waits on its context (the health service's Watch) returns; one blocked
// reading the client (reflection) cannot be woken, so at End the stream is
// finished without it: the interceptor returns, gRPC closes the stream, and
// the handler's read fails and it returns on its own. Sends after that are
// refused. A stream that ended
// because of End ends with OK, whatever the handler made of its cancelled
// context: the client should reconnect elsewhere, not back off as from an
// error.
func (s *Streams) intercept(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	guarded := &stream{ServerStream: ss, ctx: ctx}
	done := make(chan error, 1)
	go func() { done <- handler(srv, guarded) }()
	select {
	case err := <-done:
		if s.ended.Err() != nil && ss.Context().Err() == nil {
			return nil
		}
		return err
	case <-s.ended.Done():
		cancel()
		guarded.close()
		return nil
	}
}

// stream is a ServerStream with the interceptor's context, whose sends stop
// once the interceptor has finished it.
type stream struct {
	grpc.ServerStream
	ctx context.Context

	closed atomic.Bool
}

func (s *stream) Context() context.Context { return s.ctx }

// SendMsg refuses once the stream is finished. A send already under way
// (blocked on a slow client, say) is not waited for: gRPC fails it when it
// closes the stream.
func (s *stream) SendMsg(m any) error {
	if s.closed.Load() {
		return io.EOF
	}
	return s.ServerStream.SendMsg(m)
}

func (s *stream) close() { s.closed.Store(true) }

// Drain stops s gracefully, and forcibly once timeout has passed: a call
// still in flight then ends with it.
func Drain(s *grpc.Server, timeout time.Duration, logger *slog.Logger) {
	stopped := make(chan struct{})
	go func() { s.GracefulStop(); close(stopped) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		logger.Warn("in-flight gRPC calls did not finish in time; stopping", "timeout", timeout)
		s.Stop()
	}
}
