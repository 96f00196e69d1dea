// Package receiver is the scaler's OTLP metrics receiver: OTLP over gRPC
// (the collector's MetricsService) and over HTTP (POST /v1/metrics,
// protobuf or JSON), each on its own listener, writing into a store.Store.
// The wire format is the official OTLP protobuf types
// (go.opentelemetry.io/proto/otlp), never hand-written.
//
// A push is let in step by step. Its credential is checked from its
// headers, before any of its body is read (a bearer token, or a client
// certificate verified against the client CA: see Credentials). Its body
// is read under a minimum rate while the push holds one of the open
// requests, of which each credential may hold a few. Its wire form is
// scanned for what it would decode into, and only then is it decoded and
// stored, in one of a few shared slots, waiting its turn briefly. It
// writes only the namespaces its credential lists. Refusals are answered
// as OTLP asks (gRPC status codes, HTTP status codes with a
// google.rpc.Status body, or a partial success naming the rejected
// points) and counted; docs/otlp.md lists them.
package receiver

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// Config is the receiver's listeners and request bounds. Zero bounds take
// the defaults.
type Config struct {
	// GRPCAddress and HTTPAddress are the listen addresses (OTLP's usual
	// ports are 4317 and 4318); "" leaves that transport off.
	GRPCAddress, HTTPAddress string
	// TLSCertFile and TLSKeyFile serve TLS on both listeners, re-read when
	// they change; ClientCAFile verifies client certificates (mTLS).
	TLSCertFile, TLSKeyFile, ClientCAFile string
	// MaxRequestBytes caps a request's body, after decompression
	// (default 4 MiB).
	MaxRequestBytes int
	// MaxDecodedBytes caps what a request may decode into, as its wire
	// form says before it is decoded (default 8 MiB). The store's
	// MaxPointsPerRequest caps its data points, and its resources, scopes
	// and metrics as well.
	MaxDecodedBytes int
	// MaxOpenRequests caps the authenticated pushes in progress at once,
	// from their headers to their answer (default 8): their bodies
	// arriving or in hand. MaxOpenRequestsPerCredential caps one
	// credential's (default 2).
	MaxOpenRequests, MaxOpenRequestsPerCredential int
	// MaxConcurrentRequests caps the pushes decoded and stored at once
	// (default 2); one more waits its turn, 5 s at most, then is told to
	// retry later.
	MaxConcurrentRequests int
	// MinBodyBytesPerSecond is the slowest a body may arrive, after
	// BodyGrace (defaults 256 KiB/s and 5 s): a slower one is cut off.
	MinBodyBytesPerSecond int
	BodyGrace             time.Duration
	// Forward, when set, gets every push that was stored (not refused
	// whole), for the scaler's peers.
	Forward Forwarder
}

// The default bounds.
const (
	DefaultMaxRequestBytes              = 4 << 20
	DefaultMaxDecodedBytes              = 8 << 20
	DefaultMaxOpenRequests              = 8
	DefaultMaxOpenRequestsPerCredential = 2
	DefaultMaxConcurrentRequests        = 2
	DefaultMinBodyBytesPerSecond        = 256 << 10
	DefaultBodyGrace                    = 5 * time.Second
)

// maxHeaderBytes caps a request's headers on both transports: a push
// refused for its credential costs no more.
const maxHeaderBytes = 64 << 10

func (c Config) withDefaults() Config {
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&c.MaxRequestBytes, DefaultMaxRequestBytes)
	set(&c.MaxDecodedBytes, DefaultMaxDecodedBytes)
	set(&c.MaxOpenRequests, DefaultMaxOpenRequests)
	set(&c.MaxOpenRequestsPerCredential, DefaultMaxOpenRequestsPerCredential)
	set(&c.MaxConcurrentRequests, DefaultMaxConcurrentRequests)
	set(&c.MinBodyBytesPerSecond, DefaultMinBodyBytesPerSecond)
	if c.BodyGrace <= 0 {
		c.BodyGrace = DefaultBodyGrace
	}
	return c
}

// Receiver serves OTLP metrics pushes into a store.
type Receiver struct {
	cfg    Config
	store  *store.Store
	creds  *Credentials
	log    *slog.Logger
	m      *metrics
	open   *shares // authenticated pushes in progress
	slots  *semaphore.Weighted
	grpcLn net.Listener
	httpLn net.Listener
	grpc   *grpc.Server
	http   *http.Server
}

// New binds the configured listeners; Run serves them. reg receives the
// receiver's metrics (barometer_otlp_requests_total,
// barometer_otlp_requests_refused_total).
func New(cfg Config, st *store.Store, creds *Credentials, reg prometheus.Registerer, logger *slog.Logger) (*Receiver, error) {
	if cfg.GRPCAddress == "" && cfg.HTTPAddress == "" {
		return nil, errors.New("otlp receiver: neither a gRPC nor an HTTP address")
	}
	if creds == nil {
		return nil, errors.New("otlp receiver: no credentials: every push would be refused")
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tlsCfg, err := serverTLS(cfg)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	r := &Receiver{cfg: cfg, store: st, creds: creds, log: logger, m: m,
		open:  newShares(cfg.MaxOpenRequests, cfg.MaxOpenRequestsPerCredential, creds.creds),
		slots: semaphore.NewWeighted(int64(cfg.MaxConcurrentRequests))}
	if cfg.GRPCAddress != "" {
		r.grpc = r.newGRPCServer(tlsCfg)
		if r.grpcLn, err = net.Listen("tcp", cfg.GRPCAddress); err != nil {
			return nil, fmt.Errorf("otlp receiver: gRPC listener: %w", err)
		}
	}
	if cfg.HTTPAddress != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/v1/metrics", r.serveHTTP)
		// No ReadTimeout: a body is read under its own minimum rate.
		r.http = &http.Server{Handler: mux, TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
			MaxHeaderBytes: maxHeaderBytes,
			// Handshake failures (a client certificate of another CA) go
			// to the scaler's log, at debug.
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
		if r.httpLn, err = net.Listen("tcp", cfg.HTTPAddress); err != nil {
			if r.grpcLn != nil {
				r.grpcLn.Close()
			}
			return nil, fmt.Errorf("otlp receiver: HTTP listener: %w", err)
		}
	}
	return r, nil
}

// GRPCAddr and HTTPAddr are the bound addresses, nil for a transport that
// is off.
func (r *Receiver) GRPCAddr() net.Addr { return addr(r.grpcLn) }
func (r *Receiver) HTTPAddr() net.Addr { return addr(r.httpLn) }

func addr(l net.Listener) net.Addr {
	if l == nil {
		return nil
	}
	return l.Addr()
}

// Run serves until ctx ends, then stops gracefully (pushes in flight get
// up to five seconds).
func (r *Receiver) Run(ctx context.Context) error {
	errc := make(chan error, 2)
	if r.grpc != nil {
		go func() { errc <- r.grpc.Serve(r.grpcLn) }()
	}
	if r.http != nil {
		go func() {
			var err error
			if r.http.TLSConfig != nil {
				err = r.http.ServeTLS(r.httpLn, "", "")
			} else {
				err = r.http.Serve(r.httpLn)
			}
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errc <- err
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r.http != nil {
		_ = r.http.Shutdown(stop)
	}
	if r.grpc != nil {
		done := make(chan struct{})
		go func() { r.grpc.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-stop.Done():
			r.grpc.Stop()
		}
	}
	if err != nil {
		return fmt.Errorf("otlp receiver: %w", err)
	}
	return nil
}

// refusal is a push refused whole, as each transport answers it.
type refusal struct {
	reason string
	code   codes.Code
	status int
	msg    string
	retry  bool // worth retrying later (OTLP's throttling)
}

var (
	refuseUnauthenticated = &refusal{reason: "unauthenticated", code: codes.Unauthenticated, status: http.StatusUnauthorized,
		msg: "a bearer token or a verified client certificate of a configured credential is required"}
	refuseBusy = &refusal{reason: "busy", code: codes.ResourceExhausted, status: http.StatusTooManyRequests,
		msg: "too many pushes at once, retry later", retry: true}
	refuseCredentialBusy = &refusal{reason: "credential_busy", code: codes.ResourceExhausted, status: http.StatusTooManyRequests,
		msg: "too many pushes of this credential at once, retry later", retry: true}
	refuseSlowBody = &refusal{reason: "slow_body", code: codes.DeadlineExceeded, status: http.StatusRequestTimeout,
		msg: "the request body arrived slower than the receiver's minimum rate"}
)

func refuseTooLarge(limit int) *refusal {
	return &refusal{reason: "too_large", code: codes.ResourceExhausted, status: http.StatusRequestEntityTooLarge,
		msg: fmt.Sprintf("request body over %d bytes", limit)}
}

// authenticate names the push's credential, from its Authorization
// header ("Bearer <token>") or its verified client certificate.
func (r *Receiver) authenticate(authorization string, chains [][]*x509.Certificate) (grant, *refusal) {
	token := ""
	if scheme, rest, ok := strings.Cut(strings.TrimSpace(authorization), " "); ok && strings.EqualFold(scheme, "Bearer") {
		token = strings.TrimSpace(rest)
	}
	var cert *x509.Certificate
	if len(chains) > 0 && len(chains[0]) > 0 {
		cert = chains[0][0]
	}
	g, ok := r.creds.authenticate(token, cert)
	if !ok {
		return g, refuseUnauthenticated
	}
	return g, nil
}

// admit opens a push of g's credential, without waiting; done closes it.
func (r *Receiver) admit(g grant) (done func(), ref *refusal) {
	switch r.open.take(g.cred) {
	case tookShare:
		r.m.open.Inc()
		return func() { r.open.give(g.cred); r.m.open.Dec() }, nil
	case overShare:
		return nil, refuseCredentialBusy
	}
	return nil, refuseBusy
}

// maxSlotWait is how long a body in hand waits for a slot, in turn
// (decoding and storing one takes milliseconds).
const maxSlotWait = 5 * time.Second

// push decodes and stores a body in hand: scanned first, then decoded and
// stored in one of the shared slots.
func (r *Receiver) push(ctx context.Context, g grant, ctype string, body []byte) (*colmetrics.ExportMetricsServiceResponse, *refusal) {
	if _, ref := r.scan(ctype, body); ref != nil {
		return nil, ref
	}
	ctx, cancel := context.WithTimeout(ctx, maxSlotWait)
	defer cancel()
	if r.slots.Acquire(ctx, 1) != nil {
		return nil, refuseBusy
	}
	defer r.slots.Release(1)
	req, ref := r.decode(ctype, body)
	if ref != nil {
		return nil, ref
	}
	return r.ingest(req, g)
}

// ingest stores a decoded push: a response (with a partial success when
// points were rejected, or a warning), or a refusal of the whole push.
func (r *Receiver) ingest(req *colmetrics.ExportMetricsServiceRequest, g grant) (*colmetrics.ExportMetricsServiceResponse, *refusal) {
	res, err := r.store.Ingest(req.GetResourceMetrics(), g)
	switch {
	case errors.Is(err, store.ErrTooManyPoints):
		return nil, &refusal{reason: "too_many_points", code: codes.ResourceExhausted, status: http.StatusRequestEntityTooLarge, msg: err.Error()}
	case err != nil:
		return nil, &refusal{reason: "malformed", code: codes.InvalidArgument, status: http.StatusBadRequest, msg: err.Error()}
	case res.Accepted == 0 && res.Forbidden > 0 && res.Forbidden == res.Rejected:
		return nil, &refusal{reason: "forbidden", code: codes.PermissionDenied, status: http.StatusForbidden, msg: res.Message}
	}
	if r.cfg.Forward != nil {
		r.cfg.Forward.Forward(req.GetResourceMetrics(), g)
	}
	resp := &colmetrics.ExportMetricsServiceResponse{}
	if res.Rejected > 0 || res.Message != "" {
		// With nothing rejected, the message is a warning, as OTLP allows.
		resp.PartialSuccess = &colmetrics.ExportMetricsPartialSuccess{RejectedDataPoints: int64(res.Rejected), ErrorMessage: res.Message}
	}
	return resp, nil
}

type metrics struct {
	requests *prometheus.CounterVec
	refused  *prometheus.CounterVec
	open     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_otlp_requests_total",
			Help: "OTLP metrics pushes answered, by transport and status code.",
		}, []string{"transport", "code"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_otlp_requests_refused_total",
			Help: "OTLP metrics pushes refused whole, by transport and reason.",
		}, []string{"transport", "reason"}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "barometer_otlp_requests_open",
			Help: "OTLP metrics pushes authenticated and not yet answered: their bodies arriving, in hand or being stored.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.refused, m.open} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("otlp receiver metrics: %w", err)
			}
		}
	}
	return m, nil
}
