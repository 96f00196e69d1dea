package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	oklogrun "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/envconfig"
	"github.com/barometer-scaler/barometer/pkg/grpcstop"
	"github.com/barometer-scaler/barometer/pkg/health"
	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/peer"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promkind"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
	"github.com/barometer-scaler/barometer/pkg/pressure/scrape"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/scaler"
	"github.com/barometer-scaler/barometer/pkg/signalapi"
	"github.com/barometer-scaler/barometer/pkg/statuspage"
	"github.com/barometer-scaler/barometer/pkg/tlsreload"
	"github.com/barometer-scaler/barometer/pkg/trigger"
	"github.com/barometer-scaler/barometer/pkg/victim"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
)

// config is the server's configuration, read from the environment
// (pkg/envconfig declares each variable).
type config = envconfig.Config

// listening reports the bound addresses once both servers listen (tests
// bind port 0).
type listening struct{ GRPC, HTTP, OTLPGRPC, OTLPHTTP string }

// serve runs the scaler until ctx ends, then drains: readiness goes false,
// streams end, in-flight calls finish within ShutdownTimeout. The first
// actor of the run group to stop (ctx, or a failing server) stops the rest.
func serve(ctx context.Context, cfg config, logger *slog.Logger, ready chan<- listening) error {
	runCtx, stopSamplers := context.WithCancel(context.Background())
	defer stopSamplers()
	w, err := wire(runCtx, cfg, logger)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	grpcLis, err := lc.Listen(ctx, "tcp", cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("BAROMETER_GRPC_ADDR: %w", err)
	}
	defer grpcLis.Close()
	httpLis, err := lc.Listen(ctx, "tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("BAROMETER_HTTP_ADDR: %w", err)
	}
	defer httpLis.Close()
	s, err := newServers(runCtx, cfg, w, logger)
	if err != nil {
		return err
	}

	var g oklogrun.Group
	g.Add(func() error {
		<-ctx.Done()
		return nil
	}, func(error) {
		// Readiness goes first, and the gRPC health service with it; the
		// streams stay open for ShutdownDelay, long enough for probes and
		// endpoints to notice, so that new calls go elsewhere first.
		logger.Info("shutting down", "delay", cfg.ShutdownDelay)
		s.draining.Store(true)
		s.health.Shutdown()
		time.Sleep(cfg.ShutdownDelay)
	})
	g.Add(func() error { return s.grpc.Serve(grpcLis) }, func(error) {
		s.endStreams()
		grpcstop.Drain(s.grpc, cfg.ShutdownTimeout, logger)
	})
	g.Add(func() error { return s.http.Serve(httpLis) }, func(error) { s.stopHTTP(logger) })
	addrs := s.runPush(&g, w.peers)
	g.Add(func() error {
		w.reg.Run(runCtx)
		return nil
	}, func(error) { stopSamplers() })

	logger.Info("serving", "grpc", grpcLis.Addr().String(), "http", httpLis.Addr().String(),
		"allowedTargets", w.allowed.String(), "tls", s.tls, "mtls", cfg.TLSClientCAFile != "", "defaultTarget", w.defaultTarget, "version", buildVersion())
	if ready != nil {
		addrs.GRPC, addrs.HTTP = grpcLis.Addr().String(), httpLis.Addr().String()
		ready <- addrs
	}
	err = g.Run()
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
		logger.Error("server failed", "err", err)
		return err
	}
	logger.Info("stopped")
	return nil
}

// wiring is what the configuration builds before any server.
type wiring struct {
	allowed       *allow.List
	profiles      *connprofile.Set
	hints         *victim.Writer
	push          *receiver.Push
	peers         *peer.Peers // nil unless BAROMETER_PEER_ADDR
	queries       *querypool.Pool
	reg           *registry.Registry
	defaultTarget string
}

func wire(runCtx context.Context, cfg config, logger *slog.Logger) (w wiring, err error) {
	if w.allowed, err = allow.FromSetting(cfg.AllowedTargets); err != nil {
		return w, err
	}
	// A profile file that is missing or unreadable, or that names a
	// credential file that is, stops the start rather than failing every
	// sample later; the profiles' dialers are vetted by the allow-list.
	if cfg.ConnectionProfiles != "" {
		w.profiles, err = connprofile.Load(cfg.ConnectionProfiles, connprofile.Options{Control: w.allowed.Control, Logger: logger})
		if err != nil {
			return w, fmt.Errorf("BAROMETER_CONNECTION_PROFILES: %w", err)
		}
		logger.Info("connection profiles loaded", "file", cfg.ConnectionProfiles, "profiles", w.profiles.Names())
	}
	k8s, hints := victim.Connect(cfg.Kubeconfig, cfg.VictimHints, logger)
	w.hints = hints
	if w.push, err = receiver.NewPush(receiver.PushConfigFrom(cfg), logger); err != nil {
		return w, err
	}
	if w.peers, err = peer.New(peer.ConfigFrom(cfg), w.push, k8s.Discovery, k8s.Unavailable, logger); err != nil {
		return w, err
	}
	w.queries = querypool.New(0)
	w.reg = registry.NewRegistry(runCtx, registry.Config{
		Schema:          newSchema(w.allowed, w.profiles, k8s, w.queries, w.push.Store()),
		DefaultInterval: cfg.SampleInterval,
		IdleTimeout:     cfg.IdleTimeout,
		AuditSize:       cfg.AuditSize,
		AlignSamples:    true,
		After:           hints.After,
		History:         statuspage.HistorySize(cfg.StatusPage),
		Limits: registry.Limits{
			Targets: cfg.MaxTargets, TargetsPerNamespace: cfg.MaxTargetsPerNamespace, RefsPerTarget: cfg.MaxRefsPerTarget,
		},
		Logger: logger,
	})
	md, err := w.reg.Parse(cfg.DefaultTarget)
	if err != nil {
		return w, fmt.Errorf("BAROMETER_DEFAULT_TARGET: %w", err)
	}
	if _, err := w.reg.SetDefault(md); err != nil {
		return w, fmt.Errorf("default target: %w", err)
	}
	w.defaultTarget = md.Identity()
	return w, nil
}

// servers are the gRPC and HTTP servers and what their drain stops.
type servers struct {
	grpc       *grpc.Server
	http       *http.Server
	health     *grpchealth.Server
	endStreams func() // KEDA's, SignalService.Watch's, the health Watch's and reflection's
	draining   *atomic.Bool
	tls        bool
	otlp       *receiver.Receiver // nil when the push receiver is off
}

func newServers(runCtx context.Context, cfg config, w wiring, logger *slog.Logger) (*servers, error) {
	m := metrics.New(w.reg)
	collectors := []prometheus.Collector{w.queries}
	if w.hints != nil {
		collectors = append(collectors, w.hints.Hints)
	}
	if w.profiles != nil {
		collectors = append(collectors, w.profiles)
	}
	for _, c := range collectors {
		if err := m.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	s := &servers{draining: new(atomic.Bool), health: grpchealth.NewServer()}
	var err error
	if s.otlp, err = w.push.Listen(m.Register, logger); err != nil {
		return nil, err
	}
	streams := grpcstop.New()
	opts := append(m.ServerOptions(), streams.ServerOption())
	files := tlsreload.Files{CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSKeyFile, ClientCAFile: cfg.TLSClientCAFile}
	if s.tls = files.Enabled(); s.tls {
		tlsCfg, err := tlsreload.NewServerConfig(runCtx, files, logger, tlsreload.OnCertificate(m.ObserveTLSCertificate))
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	s.grpc = grpc.NewServer(opts...)
	scalerServer, signalServer := scaler.New(scaler.Config{Registry: w.reg, Logger: logger}), signalapi.NewServer(w.reg)
	externalscaler.RegisterExternalScalerServer(s.grpc, scalerServer)
	barometerv1.RegisterSignalServiceServer(s.grpc, signalServer)
	s.endStreams = func() { scalerServer.Shutdown(); signalServer.Shutdown(); streams.End() }
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	m.InitializeGRPC(s.grpc)
	s.http = &http.Server{
		Handler: httpapi.New(httpapi.Config{
			Registry: w.reg, Metrics: m.Handler(), Draining: s.draining.Load,
			Logger: logger, Health: health.DefaultOptions(), Status: statuspage.Maybe(cfg.StatusPage, statuspage.Config{Registry: w.reg, Logger: logger}),
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	return s, nil
}

// runPush adds the OTLP receiver and its peering, when on, to g. Pushes go
// on arriving while the surfaces drain, so what they serve stays fresh.
func (s *servers) runPush(g *oklogrun.Group, peers *peer.Peers) listening {
	if s.otlp == nil {
		return listening{}
	}
	ctx, stop := context.WithCancel(context.Background())
	g.Add(func() error { return s.otlp.Run(ctx) }, func(error) { stop() })
	if peers != nil {
		g.Add(func() error { return peers.Run(ctx) }, func(error) { stop() })
	}
	return listening{OTLPGRPC: receiver.AddrText(s.otlp.GRPCAddr()), OTLPHTTP: receiver.AddrText(s.otlp.HTTPAddr())}
}

// stopHTTP ends the HTTP server. Its requests are short reads of the
// cache; they get a few seconds of their own, even when the gRPC drain
// used the whole timeout.
func (s *servers) stopHTTP(logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.http.Shutdown(ctx); err != nil {
		logger.Warn("HTTP shutdown did not finish; closing connections", "err", err)
		s.http.Close()
	}
}

// newSchema is the trigger language this binary speaks: its source kinds
// and their keys. Addresses that metadata names are reached only when the
// allow-list admits them. queries is the prometheus sources' shared
// pool (nil where nothing is sampled).
func newSchema(allowed *allow.List, profiles *connprofile.Set, k scrape.Kube, queries *querypool.Pool, push *store.Store) *trigger.Schema {
	return trigger.NewSchema(host.Kind(), scrape.Kind(allowed, profiles, k), promkind.Kind(allowed, profiles, queries), otlp.Kind(push, k.Discovery))
}
