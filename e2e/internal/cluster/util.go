package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var getOpts = metav1.GetOptions{}

// FreePort returns a TCP port that was free on host a moment ago.
func FreePort(host string) int {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		panic(fmt.Sprintf("no free port on %s: %v", host, err))
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Permanent marks an error that ends a Poll at once.
func Permanent(err error) error { return permanent{err} }

// Poll calls f every 250ms (backing off to 2s) until it returns nil, a
// Permanent error, or timeout passes; the error then names what was awaited
// and f's last error.
func Poll(ctx context.Context, timeout time.Duration, what string, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 250 * time.Millisecond
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		err := f(cctx)
		ccancel()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return fmt.Errorf("%s: %w", what, p.error)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not after %s: %v", what, timeout, last)
		case <-time.After(delay):
		}
		delay = min(delay*3/2, 2*time.Second)
	}
}
