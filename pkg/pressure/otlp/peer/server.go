package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	peerv1 "github.com/barometer-scaler/barometer/proto/barometer/peer/v1"
)

// exportServer stores the pushes another replica forwards (OTLP's
// MetricsService on the peer listener). What arrives here is stored and
// never forwarded again: only the receiver forwards.
type exportServer struct {
	colmetrics.UnimplementedMetricsServiceServer
	p *Peers
}

// anyNamespace is the grant of a forwarded push: the forwarding replica
// resolved and checked each resource's namespace before it sent it.
type anyNamespace struct{}

func (anyNamespace) Namespace(claimed string) (string, bool) { return claimed, claimed != "" }

func (s exportServer) Export(ctx context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	p := s.p
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	p.m.received.Inc()
	// A batch joins several pushes, each within the cap of points per
	// request: store them in runs under the cap.
	rms := req.GetResourceMetrics()
	limit := p.store.Options().MaxPointsPerRequest
	var rejected int
	var why []string
	for len(rms) > 0 {
		n, points := 0, 0
		for n < len(rms) {
			k := store.CountPoints(rms[n : n+1])
			if n > 0 && points+k > limit {
				break
			}
			points += k
			n++
		}
		res, err := p.store.Ingest(rms[:n], anyNamespace{})
		rejected += res.Rejected
		if err != nil {
			why = append(why, err.Error())
		} else if res.Message != "" {
			why = append(why, res.Message)
		}
		rms = rms[n:]
	}
	resp := &colmetrics.ExportMetricsServiceResponse{}
	if rejected > 0 {
		resp.PartialSuccess = &colmetrics.ExportMetricsPartialSuccess{RejectedDataPoints: int64(rejected), ErrorMessage: strings.Join(why, "; ")}
	}
	return resp, nil
}

// snapshotServer sends the store whole to a replica that starts.
type snapshotServer struct {
	peerv1.UnimplementedPeerServiceServer
	p *Peers
}

// chunkBytes is about how much one snapshot message carries.
const chunkBytes = 1 << 20

func (s snapshotServer) Snapshot(_ *peerv1.SnapshotRequest, stream grpc.ServerStreamingServer[peerv1.SnapshotChunk]) error {
	st := s.p.store
	chunk := &peerv1.SnapshotChunk{HeldForNanos: int64(st.Options().Now().Sub(st.HeldSince()))}
	size, sent := 0, false
	flush := func() error {
		sent = true
		err := stream.Send(chunk)
		chunk, size = &peerv1.SnapshotChunk{}, 0
		return err
	}
	for r := range st.States() {
		head := func() *peerv1.Replica {
			return &peerv1.Replica{Namespace: r.Namespace, Name: r.Name, Pod: r.Pod, Workload: r.Workload}
		}
		rep := head()
		chunk.Replicas = append(chunk.Replicas, rep)
		for _, x := range r.Series {
			px := seriesToProto(x)
			rep.Series = append(rep.Series, px)
			if size += proto.Size(px); size >= chunkBytes {
				if err := flush(); err != nil {
					return err
				}
				// The replica goes on in the next message: the importer
				// adds its series to what it has.
				rep = head()
				chunk.Replicas = append(chunk.Replicas, rep)
			}
		}
	}
	if size > 0 || !sent {
		return flush()
	}
	return nil
}

// restore takes every linked peer's state. A peer that cannot be read is
// logged; with none read, the store holds only what is pushed from now
// on, and the otlp sources wait maxAge before their first sample.
func (p *Peers) restore(ctx context.Context) {
	for _, l := range *p.list.Load() {
		start := p.store.Options().Now()
		n, err := p.restoreFrom(ctx, l)
		if err != nil {
			p.m.restores.WithLabelValues("failed").Inc()
			p.log.Warn("OTLP peers: could not take a peer's state", "peer", l.addr, "err", err)
			continue
		}
		p.m.restores.WithLabelValues("ok").Inc()
		p.log.Info("OTLP peers: took a peer's state", "peer", l.addr, "replicas", n.replicas, "series", n.series,
			"heldSince", p.store.HeldSince(), "took", p.store.Options().Now().Sub(start))
	}
}

type restored struct{ replicas, series int }

func (p *Peers) restoreFrom(ctx context.Context, l *link) (restored, error) {
	var n restored
	ctx, cancel := context.WithTimeout(ctx, restoreTimeout)
	defer cancel()
	stream, err := peerv1.NewPeerServiceClient(l.conn).Snapshot(ctx, &peerv1.SnapshotRequest{})
	if err != nil {
		return n, err
	}
	var held time.Duration
	first, refused := true, 0
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
		if first {
			held, first = time.Duration(chunk.GetHeldForNanos()), false
		}
		for _, r := range chunk.GetReplicas() {
			stored, ref := p.store.Import(replicaFromProto(r))
			n.replicas++
			n.series += stored
			refused += ref
		}
	}
	if first {
		return n, errors.New("the snapshot ended before its first message")
	}
	if refused > 0 {
		// Not whole: the store cannot say it holds what the peer held.
		return n, fmt.Errorf("%d series of the peer's state refused (the store's caps, or states that do not hold together)", refused)
	}
	p.store.Restored(p.store.Options().Now().Add(-held))
	return n, nil
}
