package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// loadTest runs callers GetMetrics loops and streams StreamIsActive
// streams on the default target for d, over conns connections, and counts
// every call that did not end OK (a stream ended by the run's own deadline
// is not an error).
func loadTest(ctx context.Context, p *scalerProc, r *report, base observation, callers, streams int, d time.Duration) error {
	fmt.Printf("== load: %d GetMetrics callers + %d StreamIsActive streams for %v ==\n", callers, streams, d)
	const conns = 16
	// Closed before goroutines are counted again: each connection holds
	// goroutines of the scaler's own.
	clients, closeAll, err := openClients(p, conns)
	if err != nil {
		return err
	}
	defer closeAll()
	// Cancelled, not timed out: a deadline would travel with every call and
	// could end one on the server's side first, as DeadlineExceeded.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	time.AfterFunc(d, cancel)
	var calls atomic.Int64
	errs, streamErrs := &codeCounts{}, &codeCounts{}
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			if err := holdStream(runCtx, clients[i%conns], fmt.Sprintf("stream-%d", i%10)); err != nil {
				streamErrs.add(err)
			}
		})
	}
	for i := range callers {
		wg.Go(func() {
			req := defaultRead(fmt.Sprintf("caller-%d", i%10))
			for runCtx.Err() == nil {
				_, err := clients[i%conns].GetMetrics(runCtx, req)
				if err != nil && runCtx.Err() == nil {
					errs.add(err)
				}
				calls.Add(1)
			}
		})
	}
	time.Sleep(d / 2)
	during := observe(ctx, p)
	fmt.Println("  during:", during)
	wg.Wait()
	r.add("load", fmt.Sprintf("%d callers + %d streams, %v", callers, streams, d),
		fmt.Sprintf("%d GetMetrics (%.0f/s), errors [%s], stream errors [%s]", calls.Load(), float64(calls.Load())/d.Seconds(), errs, streamErrs))
	r.add("load", "during: RSS / goroutines", fmt.Sprintf("%s / %.0f", mib(during.rss), during.goroutines))
	closeAll()
	after := waitGoroutines(ctx, p, base.goroutines, 30*time.Second)
	r.add("load", "goroutines after vs baseline", fmt.Sprintf("%.0f vs %.0f (within 10%%: %v)", after.goroutines, base.goroutines, within(after.goroutines, base.goroutines)))
	return nil
}

// holdStream opens a StreamIsActive stream and reads it until ctx ends;
// an error is any end other than the cancellation of ctx.
func holdStream(ctx context.Context, c externalscaler.ExternalScalerClient, name string) error {
	s, err := c.StreamIsActive(ctx, &externalscaler.ScaledObjectRef{Namespace: "probe", Name: name}, grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	for {
		if _, err := s.Recv(); err != nil {
			if ctx.Err() != nil && status.Code(err) == codes.Canceled {
				return nil
			}
			return err
		}
	}
}

// waitGoroutines polls until goroutines are within 10 % of base, or max.
func waitGoroutines(ctx context.Context, p *scalerProc, base float64, max time.Duration) observation {
	deadline := time.Now().Add(max)
	for {
		o := observe(ctx, p)
		if within(o.goroutines, base) || time.Now().After(deadline) {
			fmt.Println("  after:", o)
			return o
		}
		time.Sleep(time.Second)
	}
}

// warmGoroutines opens StreamIsActive streams, a batch at a time, until the
// scaler runs extra more goroutines than now, then ends them and waits for
// the count to come back. The Go runtime keeps a goroutine's descriptor
// (480 bytes on amd64) for the life of the process and reuses it, so a
// baseline taken before the process ever ran as many goroutines as the
// flood's samplers would count half a MiB of runtime bookkeeping as the
// flood's residue; run once before the baseline, like every other path the
// flood takes.
func warmGoroutines(ctx context.Context, p *scalerProc, extra int) error {
	before := observe(ctx, p).goroutines
	const conns, batch = 16, 50
	clients, closeAll, err := openClients(p, conns)
	if err != nil {
		return err
	}
	defer closeAll()
	holdCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	peak, streams := before, 0
	for deadline := time.Now().Add(30 * time.Second); peak < before+float64(extra) && time.Now().Before(deadline); {
		for range batch {
			i := streams
			wg.Go(func() { _ = holdStream(holdCtx, clients[i%conns], fmt.Sprintf("warm-%d", i%10)) })
			streams++
		}
		time.Sleep(100 * time.Millisecond)
		peak = max(peak, p.gauges(ctx, "go_goroutines")["go_goroutines"])
	}
	cancel()
	wg.Wait()
	closeAll()
	waitGoroutines(ctx, p, before, 30*time.Second)
	fmt.Printf("  goroutine warm-up: %.0f at the peak (%d streams)\n", peak, streams)
	return nil
}

// openClients opens n connections to p, a client on each; closeAll closes
// them, and may be called again.
func openClients(p *scalerProc, n int) ([]externalscaler.ExternalScalerClient, func(), error) {
	var open []*grpc.ClientConn
	closeAll := func() {
		for _, c := range open {
			c.Close()
		}
		open = nil
	}
	clients := make([]externalscaler.ExternalScalerClient, n)
	for i := range clients {
		c, err := p.newConn()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		open = append(open, c)
		clients[i] = externalscaler.NewExternalScalerClient(c)
	}
	return clients, closeAll, nil
}
