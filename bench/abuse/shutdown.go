package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// streamEnd is how and when one stream ended.
type streamEnd struct {
	name string
	err  error
	at   time.Duration
}

// ok reports a clean end: io.EOF is the client's view of status OK.
func (e streamEnd) ok() bool { return errors.Is(e.err, io.EOF) }

func (e streamEnd) String() string {
	if e.ok() {
		return fmt.Sprintf("%s OK at +%v", e.name, e.at.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s %v (%s) at +%v", e.name, status.Code(e.err), e.err, e.at.Round(time.Millisecond))
}

// item5 opens a health Watch, a reflection stream and a StreamIsActive
// stream, sends SIGTERM, and times /readyz turning 503, every stream's end
// and the exit.
func item5(ctx context.Context, bin, logDir string, r *report, delay time.Duration) error {
	fmt.Println("== item 5: SIGTERM with foreign streams open ==")
	p, err := startScaler(ctx, bin, "shutdown", logDir, "BAROMETER_SHUTDOWN_DELAY="+delay.String())
	if err != nil {
		return err
	}
	defer p.kill()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	watch, err := healthpb.NewHealthClient(p.conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	refl, err := reflectionpb.NewServerReflectionClient(p.conn).ServerReflectionInfo(ctx)
	if err != nil {
		return err
	}
	if err := refl.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		return err
	}
	active, err := p.client.StreamIsActive(ctx, &externalscaler.ScaledObjectRef{Namespace: "probe", Name: "stream"})
	if err != nil {
		return err
	}
	// Each stream has answered once before the signal: all three are open.
	if _, err := watch.Recv(); err != nil {
		return err
	}
	if _, err := refl.Recv(); err != nil {
		return err
	}
	if _, err := active.Recv(); err != nil {
		return err
	}
	start := time.Now()
	ends := make(chan streamEnd, 3)
	var wg sync.WaitGroup
	drain := func(name string, recv func() error) {
		wg.Go(func() {
			for {
				if err := recv(); err != nil {
					ends <- streamEnd{name: name, err: err, at: time.Since(start)}
					return
				}
			}
		})
	}
	drain("health Watch", func() error { _, err := watch.Recv(); return err })
	drain("reflection", func() error { _, err := refl.Recv(); return err })
	drain("StreamIsActive", func() error { _, err := active.Recv(); return err })
	notReady := make(chan time.Duration, 1)
	go func() {
		for ctx.Err() == nil {
			if code, _ := p.get(ctx, "/readyz"); code == http.StatusServiceUnavailable || code == 0 {
				notReady <- time.Since(start)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	exit, exited := p.terminate(30 * time.Second)
	wg.Wait()
	close(ends)
	r.add("5", fmt.Sprintf("SIGTERM to exit (BAROMETER_SHUTDOWN_DELAY=%v)", delay), fmt.Sprintf("%v (exited: %v)", exit.Round(time.Millisecond), exited))
	select {
	case d := <-notReady:
		r.add("5", "/readyz 503 after SIGTERM", d.Round(time.Millisecond).String())
	default:
		r.add("5", "/readyz 503 after SIGTERM", "never seen")
	}
	for e := range ends {
		r.add("5", "stream end", e.String())
	}
	return nil
}
