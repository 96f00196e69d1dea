// Package promclient is how Barometer talks to a Prometheus-compatible
// server: a dedicated client (client_golang's api package over an HTTP
// client of its own) that dials only the addresses its Control vets,
// goes through no proxy, follows no redirect, bounds what it reads of an
// answer, and adds the trigger's query parameters and custom headers.
//
// Without a connection profile the client is a plain one. With
// Options.Profile (pkg/pressure/connprofile) the profile's shared
// transport carries its credentials, TLS and tenant header, re-read as
// the Secret behind them rotates; a profile follows no redirect either,
// unless it sets follow_redirects, and then only to a server the profile
// may be used with. Options.QueryParameters and Options.CustomHeaders are
// a trigger's own additions (KEDA's queryParameters and customHeaders);
// nothing a trigger adds can replace the profile's credentials or tenant.
//
// The prometheus source (pkg/pressure/promsource) asks its queries with a
// Client; the simulator's backtest reads its load trace with QueryRange.
package promclient

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
)

const (
	// DefaultQueryTimeout bounds a query when nothing else does.
	DefaultQueryTimeout = 3 * time.Second
	// DefaultMaxResponseBytes bounds an answer's body when nothing else
	// does.
	DefaultMaxResponseBytes = 16 << 20
)

// Options configure a Client.
type Options struct {
	// ServerAddress is the server's base URL, e.g.
	// http://prometheus.monitoring.svc:9090 (a path prefix is kept).
	ServerAddress string
	// MaxResponseBytes bounds one response body; zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Control vets every address dialled (allow.List.Control): the
	// server's name was checked where the metadata named it, and this
	// checks what it resolves to, on every connection. Nil vets nothing.
	// With a Profile it is not used: the profile's own dialer vets with
	// the Control its Set was loaded with.
	Control func(network, address string, c syscall.RawConn) error
	// Profile is the connection profile the server is reached through
	// (connprofile.Set.Resolve): its credentials, TLS, tenant header and
	// redirect policy. Nil: a plain client, no redirects.
	Profile *connprofile.Profile
	// QueryParameters are added to every request's URL; the parameters
	// the query API itself sends cannot be set (see CheckRequest).
	QueryParameters map[string]string
	// CustomHeaders are sent with every request; headers that carry
	// credentials or shape the request cannot be set, nor the profile's
	// tenant header (see CheckRequest).
	CustomHeaders map[string]string
	// IdleConnsPerHost is how many idle connections a plain client keeps
	// to the server, so that concurrent queries reuse them next time;
	// zero means net/http's default. A profile's transport keeps its own.
	IdleConnsPerHost int
}

// Client asks one Prometheus-compatible server.
type Client struct {
	// API is client_golang's query API over the client.
	API v1.API
	// key tells this client's requests apart from another's that would
	// be answered differently (see Key).
	key string
	// closeIdle releases kept-alive connections; nil with a profile.
	closeIdle func()
}

// New checks the query parameters and custom headers and builds the
// client; it does not contact the server.
func New(opts Options) (*Client, error) {
	var tenant, profile string
	if opts.Profile != nil {
		tenant, profile = opts.Profile.TenantHeader(), opts.Profile.Name()
	}
	params, headers, err := extras(opts.QueryParameters, opts.CustomHeaders, tenant)
	if err != nil {
		return nil, err
	}
	maxBytes := cmp.Or(opts.MaxResponseBytes, DefaultMaxResponseBytes)
	var hc *http.Client
	if opts.Profile != nil {
		hc = profileClient(opts.Profile, maxBytes)
	} else {
		hc = newHTTPClient(opts.Control, maxBytes, opts.IdleConnsPerHost)
	}
	if params != nil || headers != nil {
		hc.Transport = extrasTransport{next: hc.Transport, params: params, headers: headers}
	}
	client, err := api.NewClient(api.Config{Address: opts.ServerAddress, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("promclient: %w", err)
	}
	c := &Client{
		API: v1.NewAPI(client),
		key: fmt.Sprintf("%s\x00%s\x00%s\x00%v\x00%d", opts.ServerAddress, profile, params.Encode(), headers, maxBytes),
	}
	if opts.Profile == nil {
		// A profile's connections are shared by every client using it,
		// so one client going away leaves them to the others.
		c.closeIdle = hc.CloseIdleConnections
	}
	return c, nil
}

// Key tells this client's requests apart from those of another client
// that the server would answer differently: another server, profile,
// query parameters, custom headers or response bound. Two clients with
// the same Key may share an answer.
func (c *Client) Key() string { return c.key }

// CloseIdleConnections releases the connections kept alive for the next
// query. The Client stays usable: a later query dials again. A profile's
// connections are left to the other clients using it.
func (c *Client) CloseIdleConnections() {
	if c.closeIdle != nil {
		c.closeIdle()
	}
}

// TimeoutOption sends the server timeout as the query's evaluation
// timeout, so it stops evaluating once nobody waits for the answer; none
// when timeout is 0 (no deadline). timeout must be one ServerTimeout
// returned, which the server's duration parser reads.
func TimeoutOption(timeout time.Duration) []v1.Option {
	if timeout <= 0 {
		return nil
	}
	return []v1.Option{v1.WithTimeout(timeout)}
}

// ServerTimeout rounds a budget down to what the server's duration
// parser reads: client_golang sends Go's String(), and Prometheus (2.x)
// refuses fractions such as "2.5s", but takes "2s" and "750ms".
func ServerTimeout(budget time.Duration) time.Duration {
	if budget >= time.Second {
		return budget.Truncate(time.Second)
	}
	return budget.Truncate(time.Millisecond)
}

// profileClient goes through the profile's shared transport, with its
// redirect policy (none followed unless the profile says so, and then
// only to its own servers), under this client's response bound.
func profileClient(p *connprofile.Profile, maxBytes int64) *http.Client {
	c := p.Client()
	c.Transport = limitTransport{next: c.Transport, max: maxBytes}
	return c
}

// newHTTPClient is a dedicated client: idle connections kept for the next
// queries; a bound on what one response may make us read; no proxy and no
// redirects, because the allow-list vetted the configured address and
// nothing else.
func newHTTPClient(control func(string, string, syscall.RawConn) error, maxBytes int64, idleConns int) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: control}
	t := &http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: idleConns,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{
		Transport: limitTransport{next: t, max: maxBytes},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("redirect to %s not followed: only the configured server address is allowed", req.URL.Redacted())
		},
	}
}
