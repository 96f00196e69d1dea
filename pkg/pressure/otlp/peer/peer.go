// Package peer makes every replica of the scaler hold the same OTLP
// pushes, whichever replica a workload pushed to. Each replica's receiver
// hands what it stored to Peers.Forward, which sends it to every other
// replica over OTLP (MetricsService/Export on their peer listeners); a
// push that arrives on a peer listener is stored and never forwarded
// again. A replica that starts takes the others' whole store first
// (PeerService.Snapshot), so a restart does not read as a smaller pool.
// The peers are named statically or found through a Service's
// EndpointSlices; docs/operations.md ("HA") says why this design and what
// it costs.
package peer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/barometer-scaler/barometer/pkg/envconfig"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	peerv1 "github.com/barometer-scaler/barometer/proto/barometer/peer/v1"
)

// Config is the replica's peering.
type Config struct {
	// Address is the peer listener's address; "" turns peering off.
	Address string
	// Peers names the other replicas: "host:port" addresses separated by
	// ',', or one "k8s://<service>.<namespace>:<port>" whose EndpointSlices
	// list them (the port a number or a port name).
	Peers string
	// TokenFile holds the peer token, which every replica sends and
	// accepts (re-read when the file changes).
	TokenFile string
	// MaxBatchBytes caps one forwarded batch (default: the receiver's
	// request cap, 4 MiB). A replica accepts twice that.
	MaxBatchBytes int
	// MaxQueueBytes caps the pushes queued for one peer; past it the
	// oldest are dropped (default 16 MiB).
	MaxQueueBytes int
	// Self is this replica's pod name, left out of the peers the
	// EndpointSlices list (default: the host name, which is the pod's).
	Self string
}

// The defaults of Config's bounds, and the timings of a link.
const (
	DefaultMaxQueueBytes = 16 << 20
	// sendTimeout bounds one forwarded batch, its retries and its wait for
	// the connection included.
	sendTimeout = 5 * time.Second
	// restoreTimeout bounds the snapshot of one peer.
	restoreTimeout = 30 * time.Second
	// membersEvery is how often the EndpointSlices are read again (from
	// the informer's cache: no API call).
	membersEvery = time.Second
)

// ConfigFrom reads the peering of the scaler's configuration.
func ConfigFrom(c envconfig.Config) Config {
	return Config{Address: c.PeerAddr, Peers: c.Peers, TokenFile: c.PeerTokenFile, MaxBatchBytes: c.OTLPMaxRequestBytes}
}

// Peers is one replica's side of peering: its peer listener, a link to
// each other replica, and the store they share.
type Peers struct {
	cfg     Config
	store   *store.Store
	token   *token
	members members
	log     *slog.Logger
	m       *metrics

	lis   net.Listener
	srv   *grpc.Server
	slots chan struct{} // forwarded pushes stored at once

	mu    sync.Mutex // guards links
	links map[string]*link
	list  atomic.Pointer[[]*link] // the links, for Forward: read on every push
}

// New binds the peer listener and hands the receiver's stored pushes to
// the peers; Run serves and forwards. Peering off (no address) is nil and
// no error. kube finds k8s:// peers (nil when the scaler has no
// Kubernetes, kubeErr saying why).
func New(cfg Config, push *receiver.Push, kube discovery.Discovery, kubeErr error, logger *slog.Logger) (*Peers, error) {
	if cfg.Address == "" {
		return nil, nil
	}
	if push.Store() == nil {
		return nil, errors.New("BAROMETER_PEER_ADDR: peering shares the OTLP receiver's pushes, and the receiver is off (set BAROMETER_OTLP_GRPC_ADDR or BAROMETER_OTLP_HTTP_ADDR)")
	}
	cfg.MaxBatchBytes = cmp.Or(cfg.MaxBatchBytes, receiver.DefaultMaxRequestBytes)
	cfg.MaxQueueBytes = cmp.Or(cfg.MaxQueueBytes, DefaultMaxQueueBytes)
	if cfg.Self == "" {
		cfg.Self, _ = os.Hostname()
	}
	mem, err := parseMembers(cfg.Peers, kube, kubeErr, cfg.Self)
	if err != nil {
		return nil, fmt.Errorf("BAROMETER_PEERS: %w", err)
	}
	tok, err := readToken(cfg.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("BAROMETER_PEER_TOKEN_FILE: %w", err)
	}
	m, err := newMetrics(push.Registerer())
	if err != nil {
		return nil, err
	}
	p := &Peers{cfg: cfg, store: push.Store(), token: tok, members: mem, log: logger.With("component", "otlp-peers"), m: m,
		slots: make(chan struct{}, 4), links: map[string]*link{}}
	p.list.Store(&[]*link{})
	if p.lis, err = net.Listen("tcp", cfg.Address); err != nil {
		return nil, fmt.Errorf("BAROMETER_PEER_ADDR: %w", err)
	}
	if km, ok := mem.(*kubeMembers); ok {
		if a, ok := p.lis.Addr().(*net.TCPAddr); ok {
			km.listening(uint16(a.Port))
		}
	}
	p.srv = grpc.NewServer(grpc.InTapHandle(p.authorize), grpc.MaxRecvMsgSize(2*cfg.MaxBatchBytes),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}))
	colmetrics.RegisterMetricsServiceServer(p.srv, exportServer{p: p})
	peerv1.RegisterPeerServiceServer(p.srv, snapshotServer{p: p})
	push.Forward(p)
	return p, nil
}

// Run serves the peer listener, keeps a link to every peer, and first
// takes the peers' state, until ctx ends. A nil Peers (peering off) waits
// for ctx.
func (p *Peers) Run(ctx context.Context) error {
	if p == nil {
		<-ctx.Done()
		return nil
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- p.srv.Serve(p.lis) }()
	p.log.Info("OTLP peers: listening", "addr", p.lis.Addr().String(), "peers", p.cfg.Peers)

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { p.keepMembers(ctx) })
	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	cancel()
	wg.Wait()
	p.setLinks(nil)
	stopped := make(chan struct{})
	go func() { p.srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		p.srv.Stop()
	}
	if err != nil {
		return fmt.Errorf("otlp peers: %w", err)
	}
	return nil
}

// keepMembers links to the peers as they come and go. Once it first knows
// them, it takes their state.
func (p *Peers) keepMembers(ctx context.Context) {
	defer p.members.close()
	restored, failing := false, false
	for {
		addrs, err := p.members.read(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true // said once, until the peers are listed again
			p.log.Warn("OTLP peers: cannot list the peers; keeping the last known", "err", err)
		case err == nil:
			if failing {
				failing = false
				p.log.Info("OTLP peers: listing the peers again")
			}
			p.setLinks(addrs)
			if !restored {
				restored = true
				p.restore(ctx)
			}
		}
		if p.members.static() && restored {
			<-ctx.Done()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(membersEvery):
		}
	}
}

// setLinks keeps a link to each address and closes the others.
func (p *Peers) setLinks(addrs []string) {
	want := map[string]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	p.mu.Lock()
	var gone []*link
	for a, l := range p.links {
		if !want[a] {
			gone = append(gone, l)
			delete(p.links, a)
		}
	}
	for a := range want {
		if p.links[a] != nil {
			continue
		}
		l, err := p.dial(a)
		if err != nil {
			p.log.Warn("OTLP peers: cannot link to a peer", "peer", a, "err", err)
			continue
		}
		p.links[a] = l
		p.log.Info("OTLP peers: linked", "peer", a)
	}
	list := make([]*link, 0, len(p.links))
	for _, l := range p.links {
		list = append(list, l)
	}
	p.list.Store(&list)
	p.m.peers.Set(float64(len(list)))
	p.mu.Unlock()
	for _, l := range gone {
		l.close()
		p.log.Info("OTLP peers: unlinked", "peer", l.addr)
	}
}

// parseMembers reads BAROMETER_PEERS.
func parseMembers(spec string, kube discovery.Discovery, kubeErr error, self string) (members, error) {
	spec = strings.TrimSpace(spec)
	if rest, ok := strings.CutPrefix(spec, "k8s://"); ok {
		return parseKubeMembers(rest, kube, kubeErr, self)
	}
	var addrs []string
	for a := range strings.SplitSeq(spec, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("%q: %w (allowed: host:port addresses separated by ',', or k8s://<service>.<namespace>:<port>)", a, err)
		}
		addrs = append(addrs, a)
	}
	return staticMembers(addrs), nil
}

type metrics struct {
	forwards *prometheus.CounterVec
	queued   prometheus.Gauge
	peers    prometheus.Gauge
	received prometheus.Counter
	restores *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_otlp_peer_forwards_total",
			Help: "Pushes forwarded to another scaler replica, by result: sent, failed (the peer did not take it in time) or dropped (its queue was full).",
		}, []string{"result"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "barometer_otlp_peer_queue_bytes",
			Help: "Bytes of pushes queued for the other scaler replicas.",
		}),
		peers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "barometer_otlp_peers",
			Help: "Other scaler replicas this one forwards pushes to.",
		}),
		received: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "barometer_otlp_peer_pushes_received_total",
			Help: "Forwarded pushes received from another scaler replica.",
		}),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "barometer_otlp_peer_restores_total",
			Help: "Snapshots of a peer's store taken at start, by result: ok or failed.",
		}, []string{"result"}),
	}
	for _, r := range []string{"sent", "failed", "dropped"} {
		m.forwards.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "failed"} {
		m.restores.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.forwards, m.queued, m.peers, m.received, m.restores} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("otlp peer metrics: %w", err)
		}
	}
	return m, nil
}
