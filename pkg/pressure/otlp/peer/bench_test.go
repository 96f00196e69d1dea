package peer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store/storetest"
	peerv1 "github.com/barometer-scaler/barometer/proto/barometer/peer/v1"
)

// BenchmarkPushWithPeers pushes, as a collector does, 100 pods of the
// contract (1,200 points) every push to one replica over OTLP/gRPC, and
// measures what the pusher waits for (the Export call) and, with a peer,
// how long until the push is in the peer's store: what a sample of the
// other replica could read. The pushes follow each other at once.
//
//	go test -run '^$' -bench PushWithPeers -benchtime 200x ./pkg/pressure/otlp/peer/
func BenchmarkPushWithPeers(b *testing.B) {
	for _, peered := range []bool{false, true} {
		name := "alone"
		if peered {
			name = "one-peer"
		}
		b.Run(name, func(b *testing.B) {
			creds, token := secrets(b)
			addrA, addrB := freeAddr(b), freeAddr(b)
			var peers []string
			if peered {
				peers = []string{addrB}
			}
			a := startReplica(b, creds, token, addrA, peers...)
			var other *replica
			if peered {
				other = startReplica(b, creds, token, addrB, addrA)
			}
			conn, err := grpc.NewClient(a.recv.GRPCAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			client := colmetrics.NewMetricsServiceClient(conn)
			ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+collectorToken)
			start := time.Now().Add(-time.Hour)
			body, err := proto.Marshal(storetest.ContractPush(100, start))
			if err != nil {
				b.Fatal(err)
			}
			q := store.Query{Namespace: "team-a", Selector: map[string]string{"k8s.deployment.name": "shop"},
				Metrics: map[string]bool{exposition.Activations: true}}
			var exports, arrivals []time.Duration
			i := 0
			for b.Loop() {
				req := &colmetrics.ExportMetricsServiceRequest{}
				if err := proto.Unmarshal(body, req); err != nil {
					b.Fatal(err)
				}
				i++
				at := start.Add(time.Duration(i) * time.Second)
				storetest.SetTime(req, at)
				sent := time.Now()
				if resp, err := client.Export(ctx, req); err != nil || resp.GetPartialSuccess().GetRejectedDataPoints() > 0 {
					b.Fatalf("%v %v", resp, err)
				}
				exports = append(exports, time.Since(sent))
				if other == nil {
					continue
				}
				for {
					if reps := other.push.Store().Read(q); len(reps) == 100 && reps[99].Newest.Equal(at) {
						break
					}
					time.Sleep(100 * time.Microsecond)
				}
				arrivals = append(arrivals, time.Since(sent))
			}
			reportQuantiles(b, "export", exports)
			if other != nil {
				reportQuantiles(b, "in-peer", arrivals)
			}
		})
	}
}

// BenchmarkRestore is a replica that starts beside a peer holding 1,000
// pods of the contract (12,000 series, histories full): how long until it
// holds the peer's store.
//
//	go test -run '^$' -bench Restore -benchtime 1x ./pkg/pressure/otlp/peer/
func BenchmarkRestore(b *testing.B) {
	const pods = 1000
	creds, token := secrets(b)
	addrA := freeAddr(b)
	a := startReplica(b, creds, token, addrA)
	start := time.Now().Add(-time.Hour)
	req := storetest.ContractPush(pods, start)
	for i := range 40 {
		storetest.SetTime(req, start.Add(time.Duration(2*i)*time.Second))
		if res, err := a.push.Store().Ingest(req.GetResourceMetrics(), anyNS{}); err != nil || res.Rejected > 0 {
			b.Fatalf("%+v %v", res, err)
		}
	}
	for b.Loop() {
		began := time.Now()
		c := startReplica(b, creds, token, freeAddr(b), addrA)
		for counter(b, c.reg, "barometer_otlp_peer_restores_total", "ok") == 0 {
			time.Sleep(time.Millisecond)
		}
		b.ReportMetric(time.Since(began).Seconds(), "s-to-restore")
		n := 0
		for r := range c.push.Store().States() {
			n += len(r.Series)
		}
		b.ReportMetric(float64(n), "series")
		c.stop()
	}
	b.ReportMetric(snapshotBytes(b, addrA)/1e6, "snapshot-MB")
}

// snapshotBytes is the size of the snapshot the peer at addr sends.
func snapshotBytes(b *testing.B, addr string) float64 {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+peerToken)
	stream, err := peerv1.NewPeerServiceClient(conn).Snapshot(ctx, &peerv1.SnapshotRequest{})
	if err != nil {
		b.Fatal(err)
	}
	size := 0
	for {
		chunk, err := stream.Recv()
		if err != nil {
			break
		}
		size += proto.Size(chunk)
	}
	return float64(size)
}

type anyNS struct{}

func (anyNS) Namespace(claimed string) (string, bool) { return claimed, true }

func reportQuantiles(b *testing.B, name string, d []time.Duration) {
	slices.Sort(d)
	q := func(p float64) float64 { return d[int(p*float64(len(d)-1))].Seconds() * 1000 }
	b.ReportMetric(q(0.5), name+"-p50-ms")
	b.ReportMetric(q(0.99), name+"-p99-ms")
}
