package metrics

import (
	"context"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

// GRPCMetrics counts and times every RPC by service, method, type and code:
// barometer_grpc_server_started_total, ..._handled_total,
// ..._msg_received_total, ..._msg_sent_total and ..._handling_seconds, the
// names, labels and meaning of the go-grpc-middleware Prometheus provider
// that served them before, so dashboards and alerts read them unchanged.
//
// It is written here rather than taken from that provider because the
// provider resolves its five series by label values on every call (a hash
// of the labels and a map lookup each, about 1.5 µs a call, as long as the
// GetMetrics handler itself). Here each method's series are resolved once,
// when the method is first seen (Initialize sees them all before the first
// call), and a unary call is a map read and atomic adds: no allocation.
//
// The handling-time histogram uses the default buckets (5 ms to 10 s): a
// unary call answers from the cached snapshot in well under a millisecond,
// and GetMetrics waits at most about a second for a warming-up target, so
// both land inside them. A stream's "handling time" is its whole life and
// lands in +Inf, which is honest: streams are counted, not timed.
type GRPCMetrics struct {
	started, handled, received, sent *prometheus.CounterVec
	handling                         *prometheus.HistogramVec

	// methods maps a full method name (/service/method) to its resolved
	// series. It is replaced, never changed, so a call reads it without a
	// lock; mu serialises the replacements.
	methods atomic.Pointer[map[string]*methodMetrics]
	mu      sync.Mutex
}

// The values of the grpc_type label.
const (
	typeUnary        = "unary"
	typeClientStream = "client_stream"
	typeServerStream = "server_stream"
	typeBidiStream   = "bidi_stream"
)

// methodMetrics are one method's series, resolved once.
type methodMetrics struct {
	started, received, sent prometheus.Counter
	handling                prometheus.Observer
	// handled is indexed by code; a code past the last one gRPC defines
	// (none does today) is resolved when it happens.
	handled [codes.Unauthenticated + 1]prometheus.Counter
	labels  [3]string // grpc_type, grpc_service, grpc_method
}

// NewGRPCMetrics returns the gRPC server's metrics, to be registered on a
// prometheus.Registerer.
func NewGRPCMetrics() *GRPCMetrics {
	labels := []string{"grpc_type", "grpc_service", "grpc_method"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	}
	g := &GRPCMetrics{
		started:  counter("grpc_server_started_total", "Total number of RPCs started on the server.", labels...),
		handled:  counter("grpc_server_handled_total", "Total number of RPCs completed on the server, regardless of success or failure.", append(labels, "grpc_code")...),
		received: counter("grpc_server_msg_received_total", "Total number of RPC stream messages received on the server.", labels...),
		sent:     counter("grpc_server_msg_sent_total", "Total number of gRPC stream messages sent by the server.", labels...),
		handling: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "grpc_server_handling_seconds",
			Help:      "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
			Buckets:   prometheus.DefBuckets,
		}, labels),
	}
	g.methods.Store(&map[string]*methodMetrics{})
	return g
}

// Describe implements prometheus.Collector.
func (g *GRPCMetrics) Describe(ch chan<- *prometheus.Desc) {
	g.started.Describe(ch)
	g.handled.Describe(ch)
	g.received.Describe(ch)
	g.sent.Describe(ch)
	g.handling.Describe(ch)
}

// Collect implements prometheus.Collector.
func (g *GRPCMetrics) Collect(ch chan<- prometheus.Metric) {
	g.started.Collect(ch)
	g.handled.Collect(ch)
	g.received.Collect(ch)
	g.sent.Collect(ch)
	g.handling.Collect(ch)
}

// ServerOptions installs both interceptors. They are chained, so further
// grpc.ChainUnaryInterceptor / grpc.ChainStreamInterceptor options passed to
// grpc.NewServer add to them instead of replacing them.
func (g *GRPCMetrics) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(g.unary), grpc.ChainStreamInterceptor(g.stream)}
}

// Initialize resolves the series of every method registered on s (a
// *grpc.Server, after all services are registered), creating them at zero
// so that rate() and absent() see a method before its first call.
func (g *GRPCMetrics) Initialize(s reflection.ServiceInfoProvider) {
	for service, info := range s.GetServiceInfo() {
		for _, m := range info.Methods {
			g.method("/"+service+"/"+m.Name, streamType(m.IsClientStream, m.IsServerStream))
		}
	}
}

// unary counts one message each way (the reply only when there is one, as
// a stream counts only the messages it sent) and times the call.
func (g *GRPCMetrics) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	m := g.method(info.FullMethod, typeUnary)
	m.started.Inc()
	m.received.Inc()
	resp, err := handler(ctx, req)
	if err == nil {
		m.sent.Inc()
	}
	g.done(m, err, start)
	return resp, err
}

func (g *GRPCMetrics) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	m := g.method(info.FullMethod, streamType(info.IsClientStream, info.IsServerStream))
	m.started.Inc()
	err := handler(srv, &countedStream{ServerStream: ss, m: m})
	g.done(m, err, start)
	return err
}

// done records how a call ended and how long it took.
func (g *GRPCMetrics) done(m *methodMetrics, err error, start time.Time) {
	code := codeOf(err)
	if int(code) < len(m.handled) {
		m.handled[code].Inc()
	} else {
		g.handled.WithLabelValues(m.labels[0], m.labels[1], m.labels[2], code.String()).Inc()
	}
	m.handling.Observe(time.Since(start).Seconds())
}

// codeOf is the status code a call ended with. An error that is not a
// status is mapped as the gRPC server maps it for the client: a context's
// error to Canceled or DeadlineExceeded, anything else to Unknown.
func codeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return status.FromContextError(err).Code()
}

// method returns the series of fullMethod, resolving them on first sight.
// gRPC calls the interceptors only for registered methods, so the map is
// bounded by the services the server offers.
func (g *GRPCMetrics) method(fullMethod, typ string) *methodMetrics {
	if m, ok := (*g.methods.Load())[fullMethod]; ok {
		return m
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	old := *g.methods.Load()
	if m, ok := old[fullMethod]; ok {
		return m
	}
	service, name := splitMethod(fullMethod)
	m := &methodMetrics{
		started:  g.started.WithLabelValues(typ, service, name),
		received: g.received.WithLabelValues(typ, service, name),
		sent:     g.sent.WithLabelValues(typ, service, name),
		handling: g.handling.WithLabelValues(typ, service, name),
		labels:   [3]string{typ, service, name},
	}
	for c := range m.handled {
		m.handled[c] = g.handled.WithLabelValues(typ, service, name, codes.Code(c).String())
	}
	next := maps.Clone(old)
	next[fullMethod] = m
	g.methods.Store(&next)
	return m
}

// splitMethod splits /service/method; anything else is unknown/unknown.
func splitMethod(fullMethod string) (service, method string) {
	service, method, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if !ok {
		return "unknown", "unknown"
	}
	return service, method
}

func streamType(client, server bool) string {
	switch {
	case client && server:
		return typeBidiStream
	case client:
		return typeClientStream
	case server:
		return typeServerStream
	}
	return typeUnary
}

// countedStream counts the messages a stream receives and sends.
type countedStream struct {
	grpc.ServerStream
	m *methodMetrics
}

func (s *countedStream) SendMsg(msg any) error {
	err := s.ServerStream.SendMsg(msg)
	if err == nil {
		s.m.sent.Inc()
	}
	return err
}

func (s *countedStream) RecvMsg(msg any) error {
	err := s.ServerStream.RecvMsg(msg)
	if err == nil {
		s.m.received.Inc()
	}
	return err
}
