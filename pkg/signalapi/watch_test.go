package signalapi

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/registry"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
	"google.golang.org/grpc/codes"
)

// watcher reads a Watch stream in the background, so a test can wait for a
// message with a deadline and see how the stream ended.
type watcher struct {
	msgs chan *barometerv1.ScalingSignal
	end  chan error // the Recv error that ended the stream; io.EOF for OK
}

func (e *env) watch(ctx context.Context, t *testing.T, ref registry.Ref) *watcher {
	t.Helper()
	stream, err := e.client.Watch(ctx, &barometerv1.WatchRequest{Namespace: ref.Namespace, Name: ref.Name})
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{msgs: make(chan *barometerv1.ScalingSignal, 16), end: make(chan error, 1)}
	go func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				w.end <- err
				return
			}
			w.msgs <- msg
		}
	}()
	return w
}

func (w *watcher) next(t *testing.T) *barometerv1.ScalingSignal {
	t.Helper()
	select {
	case msg := <-w.msgs:
		return msg
	case err := <-w.end:
		t.Fatalf("stream ended: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5s")
	}
	return nil
}

func (w *watcher) ended(t *testing.T) error {
	t.Helper()
	select {
	case msg := <-w.msgs:
		t.Fatalf("message instead of the end: %v", msg)
	case err := <-w.end:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end within 5s")
	}
	return nil
}

func TestWatchSendsAtOnceThenOnePerSampleAndEndsCleanly(t *testing.T) {
	e := newEnv(t, "a")
	e.set("a", 0.1)
	def := e.acquire(t, registry.Ref{}, map[string]string{})

	w := e.watch(context.Background(), t, registry.Ref{})
	// The current signal at once, without waiting for a sample.
	wantSignal(t, w.next(t), def.Key, 0.1, e.clock.Now())

	for _, cpu := range []float64{0.3, 0.6, 0.2} {
		e.set("a", cpu)
		at := e.clock.Tick(t, interval)
		// An extra message would arrive before this sample's: its signal
		// (or, after the last, the end of the stream) proves there was
		// one message per sample, without waiting for an absence.
		wantSignal(t, w.next(t), def.Key, cpu, at)
	}

	e.srv.Shutdown()
	if err := w.ended(t); !errors.Is(err, io.EOF) {
		t.Fatalf("stream ended with %v, want OK (io.EOF)", err)
	}
	// A draining server turns new watchers away rather than ending them
	// cleanly at once, which would invite a reconnect loop.
	stream, err := e.client.Watch(context.Background(), &barometerv1.WatchRequest{})
	if err == nil {
		_, err = stream.Recv() // a server stream's status arrives here
	}
	wantStatus(t, err, codes.Unavailable, "shutting down")
}

func TestWatchHonoursClientCancel(t *testing.T) {
	e := newEnv(t, "a")
	e.acquire(t, registry.Ref{}, map[string]string{})
	ctx, cancel := context.WithCancel(context.Background())
	w := e.watch(ctx, t, registry.Ref{})
	w.next(t)
	cancel()
	wantStatus(t, w.ended(t), codes.Canceled, "")

	// GracefulStop waits for every handler: it returns only if Watch saw
	// the cancel and returned, without Shutdown's help.
	stopped := make(chan struct{})
	go func() {
		e.grpc.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch handler still running after the client cancelled")
	}
}

func TestWatchFollowsScaledObjectAndEndsWhenForgotten(t *testing.T) {
	e := newEnv(t, "a", "b")
	ref := registry.Ref{Namespace: "shop", Name: "checkout"}
	first := e.acquire(t, ref, map[string]string{"script": "a"})
	w := e.watch(context.Background(), t, ref)
	if got := w.next(t).GetTarget(); got != first.Key {
		t.Fatalf("target %q, want %q", got, first.Key)
	}

	// KEDA now asks with other settings (and no longer with the old
	// ones): the ScaledObject moves to a new target and the stream
	// follows, though the old one still runs.
	e.clock.Advance(2 * time.Minute)
	second := e.acquire(t, ref, map[string]string{"script": "b"})
	if got := w.next(t).GetTarget(); got != second.Key {
		t.Fatalf("after the move: target %q, want %q", got, second.Key)
	}

	// KEDA stops asking: once reaped, the ScaledObject is unknown and the
	// stream says so instead of freezing.
	e.clock.Advance(registry.DefaultIdleTimeout + time.Second)
	if n := e.reg.ReapIdle(); n != 2 {
		t.Fatalf("reaped %d targets, want 2", n)
	}
	wantStatus(t, w.ended(t), codes.NotFound, ref.String())
}

func TestWatchUnknownScaledObject(t *testing.T) {
	e := newEnv(t, "a")
	w := e.watch(context.Background(), t, registry.Ref{Namespace: "shop", Name: "cart"})
	wantStatus(t, w.ended(t), codes.NotFound, "shop/cart")
}
