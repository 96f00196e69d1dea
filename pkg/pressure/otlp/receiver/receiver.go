// Package receiver is the scaler's OTLP metrics receiver: OTLP over gRPC
// (the collector's MetricsService) and over HTTP (POST /v1/metrics,
// protobuf or JSON), each on its own listener, writing into a store.Store.
// The wire format is the official OTLP protobuf types
// (go.opentelemetry.io/proto/otlp), never hand-written.
//
// Every push is authenticated before it is read (a bearer token, or a
// client certificate verified against the client CA: see Credentials),
// and writes only the namespaces its credential lists. Refusals are
// answered as OTLP asks (gRPC status codes, HTTP status codes with a
// google.rpc.Status body, or a partial success naming the rejected points)
// and counted; docs/otlp.md lists them.
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
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP exporters may compress with gzip
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

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
	// MaxConcurrentRequests caps the pushes decoded and stored at once;
	// one more is answered "retry later" (default 8).
	MaxConcurrentRequests int
	// Forward, when set, gets every push that was stored (not refused
	// whole), for the scaler's peers.
	Forward Forwarder
}

// The default bounds.
const (
	DefaultMaxRequestBytes       = 4 << 20
	DefaultMaxConcurrentRequests = 8
)

// Receiver serves OTLP metrics pushes into a store.
type Receiver struct {
	cfg    Config
	store  *store.Store
	creds  *Credentials
	log    *slog.Logger
	m      *metrics
	slots  chan struct{}
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
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxConcurrentRequests <= 0 {
		cfg.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
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
	r := &Receiver{cfg: cfg, store: st, creds: creds, log: logger, m: m, slots: make(chan struct{}, cfg.MaxConcurrentRequests)}
	if cfg.GRPCAddress != "" {
		opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(cfg.MaxRequestBytes), grpc.StatsHandler(grpcStats{r})}
		if tlsCfg != nil {
			opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
		}
		r.grpc = grpc.NewServer(opts...)
		colmetrics.RegisterMetricsServiceServer(r.grpc, grpcService{r: r})
		if r.grpcLn, err = net.Listen("tcp", cfg.GRPCAddress); err != nil {
			return nil, fmt.Errorf("otlp receiver: gRPC listener: %w", err)
		}
	}
	if cfg.HTTPAddress != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/v1/metrics", r.serveHTTP)
		r.http = &http.Server{Handler: mux, TLSConfig: tlsCfg, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
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
)

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

// acquire takes a slot for one push without waiting.
func (r *Receiver) acquire() bool {
	select {
	case r.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (r *Receiver) release() { <-r.slots }

// ingest stores a decoded push: a response (with a partial success when
// points were rejected), or a refusal of the whole push.
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
	if res.Rejected > 0 {
		resp.PartialSuccess = &colmetrics.ExportMetricsPartialSuccess{RejectedDataPoints: int64(res.Rejected), ErrorMessage: res.Message}
	}
	return resp, nil
}

// grpcService is the OTLP MetricsService.
type grpcService struct {
	colmetrics.UnimplementedMetricsServiceServer
	r *Receiver
}

type handledKey struct{}

func (s grpcService) Export(ctx context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	if h, ok := ctx.Value(handledKey{}).(*atomic.Bool); ok {
		h.Store(true)
	}
	resp, ref := s.export(ctx, req)
	if ref != nil {
		s.r.m.refused.WithLabelValues("grpc", ref.reason).Inc()
		st := status.New(ref.code, ref.msg)
		if ref.retry {
			if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)}); err == nil {
				st = d
			}
		}
		return nil, st.Err()
	}
	return resp, nil
}

func (s grpcService) export(ctx context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, *refusal) {
	var authorization string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) > 0 {
			authorization = v[0]
		}
	}
	var chains [][]*x509.Certificate
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			chains = info.State.VerifiedChains
		}
	}
	g, ref := s.r.authenticate(authorization, chains)
	if ref != nil {
		return nil, ref
	}
	if !s.r.acquire() {
		return nil, refuseBusy
	}
	defer s.r.release()
	return s.r.ingest(req, g)
}

// grpcStats counts every gRPC push by its status code, and as refused the
// ones gRPC refused before the service saw them: a message over
// MaxRequestBytes, or one that does not decode.
type grpcStats struct{ r *Receiver }

func (grpcStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, handledKey{}, new(atomic.Bool))
}

func (s grpcStats) HandleRPC(ctx context.Context, st stats.RPCStats) {
	end, ok := st.(*stats.End)
	if !ok {
		return
	}
	code := status.Code(end.Error)
	s.r.m.requests.WithLabelValues("grpc", code.String()).Inc()
	if h, ok := ctx.Value(handledKey{}).(*atomic.Bool); ok && !h.Load() && code != codes.OK {
		reason := "malformed"
		if code == codes.ResourceExhausted {
			reason = "too_large"
		}
		s.r.m.refused.WithLabelValues("grpc", reason).Inc()
	}
}

func (grpcStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (grpcStats) HandleConn(context.Context, stats.ConnStats)                       {}

type metrics struct {
	requests *prometheus.CounterVec
	refused  *prometheus.CounterVec
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
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.refused} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("otlp receiver metrics: %w", err)
			}
		}
	}
	return m, nil
}
