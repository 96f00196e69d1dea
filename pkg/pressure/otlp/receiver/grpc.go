package receiver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"sync/atomic"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // OTLP exporters may compress with gzip
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/types/known/durationpb"
)

// newGRPCServer serves the OTLP MetricsService. The generated handler
// decodes a request before any code of ours runs, so the service is
// declared here with a handler that reads the body undecoded, and the
// credential is checked before that, from the headers (the tap).
func (r *Receiver) newGRPCServer(tlsCfg *tls.Config) *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(r.cfg.MaxRequestBytes),
		grpc.MaxHeaderListSize(maxHeaderBytes),
		grpc.InTapHandle(r.tap),
		grpc.StatsHandler(grpcStats{r}),
		grpc.ForceServerCodecV2(wireCodec{encoding.GetCodecV2(grpcproto.Name)}),
	}
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	s := grpc.NewServer(opts...)
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: colmetrics.MetricsService_ServiceDesc.ServiceName,
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: r.grpcExport}},
		Metadata:    colmetrics.MetricsService_ServiceDesc.Metadata,
	}, r)
	return s
}

// admittedKey holds, in a stream's context, what the tap learnt of it.
type admittedKey struct{}

type admitted struct {
	grant grant
	// cut ends the stream: its body did not arrive in time.
	cut context.CancelCauseFunc
}

var errSlowBody = errors.New("the request body arrived too slowly")

// tap authenticates a stream from its headers, before gRPC reads any of
// its message: an unauthenticated push costs its headers only. It runs
// on the connection's reader, so it must not block.
func (r *Receiver) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	var authorization string
	if v := info.Header.Get("authorization"); len(v) > 0 {
		authorization = v[0]
	}
	var chains [][]*x509.Certificate
	if p, ok := peer.FromContext(ctx); ok {
		if tlsInfo, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			chains = tlsInfo.State.VerifiedChains
		}
	}
	g, ref := r.authenticate(authorization, chains)
	if ref != nil {
		// The stream ends here: no stats event counts it.
		r.m.requests.WithLabelValues("grpc", ref.code.String()).Inc()
		r.m.refused.WithLabelValues("grpc", ref.reason).Inc()
		return nil, status.Error(ref.code, ref.msg)
	}
	ctx, cut := context.WithCancelCause(ctx)
	return context.WithValue(ctx, admittedKey{}, admitted{grant: g, cut: cut}), nil
}

// grpcExport is MetricsService/Export: it reads the message as bytes,
// within the body deadline, then pushes it as the HTTP handler does.
func (r *Receiver) grpcExport(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	if h, ok := ctx.Value(handledKey{}).(*atomic.Bool); ok {
		h.Store(true)
	}
	resp, ref := r.exportGRPC(ctx, dec)
	if ref != nil {
		r.m.refused.WithLabelValues("grpc", ref.reason).Inc()
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

func (r *Receiver) exportGRPC(ctx context.Context, dec func(any) error) (*colmetrics.ExportMetricsServiceResponse, *refusal) {
	a, ok := ctx.Value(admittedKey{}).(admitted)
	if !ok {
		return nil, refuseUnauthenticated
	}
	done, ref := r.admit(a.grant)
	if ref != nil {
		return nil, ref
	}
	defer done()
	// gRPC reads the whole message before it hands it over, so its
	// deadline is the largest body's at the minimum rate.
	timer := time.AfterFunc(r.bodyDeadline(r.cfg.MaxRequestBytes), func() { a.cut(errSlowBody) })
	var body wireMessage
	err := dec(&body)
	defer body.data.Free()
	if !timer.Stop() {
		return nil, refuseSlowBody
	}
	switch {
	case status.Code(err) == codes.ResourceExhausted:
		return nil, refuseTooLarge(r.cfg.MaxRequestBytes)
	case err != nil:
		return nil, malformed(err)
	}
	return r.push(ctx, a.grant, contentProtobuf, body.bytes())
}

// wireMessage is a request's message as it came, undecoded: gRPC's own
// buffers, held until freed.
type wireMessage struct{ data mem.BufferSlice }

// bytes is the message, copied only when gRPC holds it in pieces (as it
// does a decompressed one).
func (w *wireMessage) bytes() []byte {
	if len(w.data) == 1 {
		return w.data[0].ReadOnlyData()
	}
	return w.data.Materialize()
}

// wireCodec is the gRPC server's codec: the proto codec, but a message
// read into a *wireMessage keeps its buffers, for the scan to read before
// the decode.
type wireCodec struct{ encoding.CodecV2 }

func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if w, ok := v.(*wireMessage); ok {
		data.Ref()
		w.data = data
		return nil
	}
	return c.CodecV2.Unmarshal(data, v)
}

// grpcStats counts every gRPC push the tap let through by its status
// code, and as refused the ones gRPC refused before the handler saw them
// (a compression it does not know).
type grpcStats struct{ r *Receiver }

type handledKey struct{}

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
		if code == codes.Unimplemented {
			reason = "unsupported_media_type"
		}
		s.r.m.refused.WithLabelValues("grpc", reason).Inc()
	}
}

func (grpcStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (grpcStats) HandleConn(context.Context, stats.ConnStats)                       {}
