package peer

import (
	"context"
	"fmt"
	"sync"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// exportMethod is OTLP's MetricsService/Export, which the peer listener
// serves for forwarded pushes.
const exportMethod = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"

// retryPolicy is grpc-go's own retry of a forwarded batch that a peer
// could not take (restarting, or busy): a few attempts within sendTimeout.
const retryPolicy = `{"methodConfig": [{
  "name": [{"service": "opentelemetry.proto.collector.metrics.v1.MetricsService"}, {"service": "barometer.peer.v1.PeerService"}],
  "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]}}]}`

// Forward queues a push the receiver stored for every peer (the
// receiver's Forwarder). Each resource is written with the namespace its
// grant resolved, so a peer, which trusts the peer token for every
// namespace, stores it where this replica did; a resource the grant
// refused is left out. The push is encoded once, here, and the peers'
// queues share the bytes.
func (p *Peers) Forward(rms []*metricspb.ResourceMetrics, g store.Grant) {
	links := *p.list.Load()
	if len(links) == 0 {
		return
	}
	req := &colmetrics.ExportMetricsServiceRequest{ResourceMetrics: make([]*metricspb.ResourceMetrics, 0, len(rms))}
	for _, rm := range rms {
		claimed := namespaceOf(rm)
		ns, ok := g.Namespace(claimed)
		if !ok {
			continue
		}
		if ns != claimed {
			rm = withNamespace(rm, ns)
		}
		req.ResourceMetrics = append(req.ResourceMetrics, rm)
	}
	if len(req.ResourceMetrics) == 0 {
		return
	}
	b, err := proto.Marshal(req)
	if err != nil {
		p.m.forwards.WithLabelValues("failed").Add(float64(len(links)))
		p.log.Warn("OTLP peers: a push does not encode; not forwarded", "err", err)
		return
	}
	for _, l := range links {
		l.enqueue(b)
	}
}

func namespaceOf(rm *metricspb.ResourceMetrics) string {
	for _, kv := range rm.GetResource().GetAttributes() {
		if kv.GetKey() == store.AttrNamespace {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// withNamespace is rm with its namespace attribute set to ns: a new
// resource, the data points shared.
func withNamespace(rm *metricspb.ResourceMetrics, ns string) *metricspb.ResourceMetrics {
	attrs := make([]*commonpb.KeyValue, 0, len(rm.GetResource().GetAttributes())+1)
	for _, kv := range rm.GetResource().GetAttributes() {
		if kv.GetKey() != store.AttrNamespace {
			attrs = append(attrs, kv)
		}
	}
	attrs = append(attrs, &commonpb.KeyValue{Key: store.AttrNamespace, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: ns}}})
	return &metricspb.ResourceMetrics{Resource: &resourcepb.Resource{Attributes: attrs}, ScopeMetrics: rm.GetScopeMetrics(), SchemaUrl: rm.GetSchemaUrl()}
}

// link is one peer: a gRPC connection and the pushes queued for it, sent
// in order by one goroutine, several at a time.
type link struct {
	addr string
	conn *grpc.ClientConn
	p    *Peers

	mu     sync.Mutex
	queue  [][]byte
	queued int
	closed bool

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// dial links to a peer. The connection is grpc-go's: it reconnects on its
// own, backing off at most a second, so a peer that restarts is reached
// again within a second; keepalives find a peer that vanished.
func (p *Peers) dial(addr string) (*link, error) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(p.token),
		grpc.WithDefaultServiceConfig(retryPolicy),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 2 * time.Second}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(4*p.cfg.MaxBatchBytes)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{addr: addr, conn: conn, p: p, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go l.run(ctx)
	return l, nil
}

// enqueue adds a push, dropping the oldest ones past MaxQueueBytes: the
// newest points are the ones a sample reads.
func (l *link) enqueue(b []byte) {
	l.mu.Lock()
	if l.closed { // a Forward that read the links before this one closed
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, b)
	l.queued += len(b)
	added, dropped := len(b), 0
	for l.queued > l.p.cfg.MaxQueueBytes && len(l.queue) > 1 {
		added -= len(l.queue[0])
		l.queued -= len(l.queue[0])
		l.queue[0] = nil
		l.queue = l.queue[1:]
		dropped++
	}
	l.mu.Unlock()
	l.p.m.queued.Add(float64(added))
	if dropped > 0 {
		l.p.m.forwards.WithLabelValues("dropped").Add(float64(dropped))
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take removes the oldest queued pushes, as many as fit MaxBatchBytes (one
// at least), joined into one request: the concatenation of encoded
// ExportMetricsServiceRequests is one whose resources are all of theirs.
func (l *link) take() ([]byte, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, size := 0, 0
	for n < len(l.queue) && (n == 0 || size+len(l.queue[n]) <= l.p.cfg.MaxBatchBytes) {
		size += len(l.queue[n])
		n++
	}
	if n == 0 {
		return nil, 0
	}
	batch := l.queue[0]
	if n > 1 {
		batch = make([]byte, 0, size)
		for _, b := range l.queue[:n] {
			batch = append(batch, b...)
		}
	}
	clear(l.queue[:n])
	l.queue = l.queue[n:]
	l.queued -= size
	l.p.m.queued.Sub(float64(size))
	return batch, n
}

func (l *link) run(ctx context.Context) {
	defer close(l.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		}
		for {
			batch, n := l.take()
			if n == 0 {
				break
			}
			result := "sent"
			if err := l.send(ctx, batch); err != nil {
				if ctx.Err() != nil {
					return
				}
				result = "failed"
				l.p.log.Debug("OTLP peers: a forward failed", "peer", l.addr, "pushes", n, "err", err)
			}
			l.p.m.forwards.WithLabelValues(result).Add(float64(n))
		}
	}
}

// send delivers one batch, waiting for the connection and retrying as
// retryPolicy says, within sendTimeout.
func (l *link) send(ctx context.Context, batch []byte) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	resp := &colmetrics.ExportMetricsServiceResponse{}
	err := l.conn.Invoke(ctx, exportMethod, encoded(batch), resp, grpc.ForceCodecV2(rawCodec{}), grpc.WaitForReady(true),
		grpc.MaxRetryRPCBufferSize(len(batch)+1<<10))
	if err != nil {
		return err
	}
	if ps := resp.GetPartialSuccess(); ps.GetRejectedDataPoints() > 0 {
		l.p.log.Debug("OTLP peers: a peer refused part of a forward", "peer", l.addr, "points", ps.GetRejectedDataPoints(), "why", ps.GetErrorMessage())
	}
	return nil
}

// close stops the link and drops what is queued.
func (l *link) close() {
	l.cancel()
	<-l.done
	l.conn.Close()
	l.mu.Lock()
	l.p.m.queued.Sub(float64(l.queued))
	l.queue, l.queued, l.closed = nil, 0, true
	l.mu.Unlock()
}

// encoded is a request already encoded, sent as it is by rawCodec.
type encoded []byte

// rawCodec sends an encoded request's bytes unchanged and decodes the
// response as protobuf: a forwarded push is encoded once, whatever the
// number of peers, and batches are joined without decoding them.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(encoded)
	if !ok {
		return nil, fmt.Errorf("peer codec: %T is not an encoded request", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("peer codec: %T is not a protobuf message", v)
	}
	return proto.Unmarshal(data.Materialize(), m)
}

func (rawCodec) Name() string { return "proto" }
