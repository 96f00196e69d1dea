package promclient

import (
	"cmp"
	"context"
	"fmt"
	"syscall"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// RangeQuery is one range query asked of a Prometheus server with a plain
// Client: every dialled address vetted by Control, no proxy, no redirect,
// and a response no larger than MaxResponseBytes. The simulator's
// backtest reads its load trace with it.
type RangeQuery struct {
	// ServerAddress is the server's base URL, as Options.ServerAddress.
	ServerAddress string
	Query         string
	Range         v1.Range
	// Timeout bounds the query, and is sent to the server as its
	// evaluation timeout; zero means DefaultQueryTimeout.
	Timeout time.Duration
	// MaxResponseBytes bounds the response body; zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Control vets every address dialled, as Options.Control.
	Control func(network, address string, c syscall.RawConn) error
}

// QueryRange runs q and returns the server's answer.
func QueryRange(ctx context.Context, q RangeQuery) (model.Value, error) {
	c, err := New(Options{ServerAddress: q.ServerAddress, MaxResponseBytes: q.MaxResponseBytes, Control: q.Control})
	if err != nil {
		return nil, err
	}
	defer c.CloseIdleConnections()
	timeout := cmp.Or(q.Timeout, DefaultQueryTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, _, _, err := c.API.QueryRange(ctx, q.Query, q.Range, v1.WithTimeout(ServerTimeout(timeout)))
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: range query: %w", q.ServerAddress, err)
	}
	return v, nil
}
