package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	oklogrun "github.com/oklog/run"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/grpcstop"
	"github.com/barometer-scaler/barometer/pkg/health"
	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/kube"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/scaler"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/signalapi"
	"github.com/barometer-scaler/barometer/pkg/tlsreload"
	"github.com/barometer-scaler/barometer/pkg/trigger"
	"github.com/barometer-scaler/barometer/pkg/victim"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
)

// listening reports the bound addresses once both servers listen (tests
// bind port 0).
type listening struct{ GRPC, HTTP, OTLPGRPC, OTLPHTTP string }

// serve runs the scaler until ctx ends, then drains: readiness goes false,
// streams end cleanly, in-flight calls finish within ShutdownTimeout. The
// servers and the registry are the actors of one run group: the first to
// stop (ctx, or a server that fails) stops the others, in the order they
// were added, and serve returns once all have.
func serve(ctx context.Context, cfg config, logger *slog.Logger, ready chan<- listening) error {
	spec := cfg.AllowedTargets
	if strings.TrimSpace(spec) == "" {
		spec = allow.DefaultSpec // set but empty reads as unset
	}
	allowed, err := allow.Parse(spec)
	if err != nil {
		return err
	}
	profiles, err := loadProfiles(cfg.ConnectionProfiles, allowed, logger)
	if err != nil {
		return err
	}
	k8s, hints := connectKube(cfg.Kubeconfig, cfg.VictimHints, logger)
	push, err := newOTLPPush(cfg.OTLP, logger)
	if err != nil {
		return err
	}
	runCtx, stopSamplers := context.WithCancel(context.Background())
	defer stopSamplers()
	reg := registry.NewRegistry(runCtx, registry.Config{
		Schema:          newSchema(allowed, profiles, k8s, push.store),
		DefaultInterval: cfg.SampleInterval,
		IdleTimeout:     cfg.IdleTimeout,
		AuditSize:       cfg.AuditSize,
		AlignSamples:    true,
		After:           hints.after,
		Limits: registry.Limits{
			Targets: cfg.MaxTargets, TargetsPerNamespace: cfg.MaxTargetsPerNamespace, RefsPerTarget: cfg.MaxRefsPerTarget,
		},
		Logger: logger,
	})
	md, err := reg.Parse(cfg.DefaultTarget)
	if err != nil {
		return fmt.Errorf("BAROMETER_DEFAULT_TARGET: %w", err)
	}
	if _, err := reg.SetDefault(md); err != nil {
		return fmt.Errorf("default target: %w", err)
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

	m := metrics.New(reg)
	if hints != nil {
		if err := m.Register(hints.Hints); err != nil {
			return fmt.Errorf("victim hint metrics: %w", err)
		}
	}
	if profiles != nil {
		if err := m.Register(profiles); err != nil {
			return fmt.Errorf("connection profile metrics: %w", err)
		}
	}
	recv, err := push.listen(m, logger)
	if err != nil {
		return err
	}
	streams := grpcstop.New()
	opts := append(m.ServerOptions(), streams.ServerOption())
	files := tlsreload.Files{CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSKeyFile, ClientCAFile: cfg.TLSClientCAFile}
	if files.Enabled() {
		tlsCfg, err := tlsreload.NewServerConfig(runCtx, files, logger, tlsreload.OnCertificate(m.ObserveTLSCertificate))
		if err != nil {
			return err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	grpcServer := grpc.NewServer(opts...)
	scalerServer := scaler.New(scaler.Config{Registry: reg, Logger: logger})
	externalscaler.RegisterExternalScalerServer(grpcServer, scalerServer)
	signalServer := signalapi.NewServer(reg)
	barometerv1.RegisterSignalServiceServer(grpcServer, signalServer)
	grpcHealth := grpchealth.NewServer()
	healthpb.RegisterHealthServer(grpcServer, grpcHealth)
	reflection.Register(grpcServer)
	m.InitializeGRPC(grpcServer)

	var draining atomic.Bool
	httpServer := &http.Server{
		Handler: httpapi.New(httpapi.Config{
			Registry: reg, Metrics: m.Handler(), Draining: draining.Load,
			Logger: logger, Health: health.DefaultOptions(),
		}),
		ReadHeaderTimeout: 5 * time.Second,
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
		draining.Store(true)
		grpcHealth.Shutdown()
		time.Sleep(cfg.ShutdownDelay)
	})
	g.Add(func() error { return grpcServer.Serve(grpcLis) }, func(error) {
		scalerServer.Shutdown()
		signalServer.Shutdown()
		streams.End() // the health Watch and reflection too
		drainGRPC(grpcServer, cfg.ShutdownTimeout, logger)
	})
	g.Add(func() error { return httpServer.Serve(httpLis) }, func(error) {
		// HTTP requests are short reads of the cache; they get a few
		// seconds of their own, even when the gRPC drain used the whole
		// timeout.
		httpCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := httpServer.Shutdown(httpCtx); err != nil {
			logger.Warn("HTTP shutdown did not finish; closing connections", "err", err)
			httpServer.Close()
		}
	})
	var otlpAddrs listening
	if recv != nil {
		// Pushes go on arriving while the surfaces drain, so the signal
		// they serve stays fresh; the receiver stops before the samplers.
		recvCtx, stopRecv := context.WithCancel(context.Background())
		g.Add(func() error { return recv.Run(recvCtx) }, func(error) { stopRecv() })
		otlpAddrs = listening{OTLPGRPC: addrText(recv.GRPCAddr()), OTLPHTTP: addrText(recv.HTTPAddr())}
	}
	g.Add(func() error {
		reg.Run(runCtx)
		return nil
	}, func(error) { stopSamplers() })

	logger.Info("serving", "grpc", grpcLis.Addr().String(), "http", httpLis.Addr().String(),
		"allowedTargets", allowed.String(), "tls", files.Enabled(), "mtls", cfg.TLSClientCAFile != "", "defaultTarget", md.Identity(), "version", buildVersion())
	if ready != nil {
		ready <- listening{GRPC: grpcLis.Addr().String(), HTTP: httpLis.Addr().String(), OTLPGRPC: otlpAddrs.OTLPGRPC, OTLPHTTP: otlpAddrs.OTLPHTTP}
	}
	err = g.Run()
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
		logger.Error("server failed", "err", err)
		return err
	}
	logger.Info("stopped")
	return nil
}

// drainGRPC stops the gRPC server gracefully, and forcibly once timeout has
// passed.
func drainGRPC(s *grpc.Server, timeout time.Duration, logger *slog.Logger) {
	stopped := make(chan struct{})
	go func() { s.GracefulStop(); close(stopped) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		logger.Warn("in-flight gRPC calls did not finish in time; stopping", "timeout", timeout)
		s.Stop()
	}
}

// loadProfiles loads BAROMETER_CONNECTION_PROFILES, if set. A file that
// is missing or unreadable, or that names a credential file that is, stops
// the start rather than failing every sample later. The profiles' dialers
// are vetted by the allow-list, as the sources' own are.
func loadProfiles(path string, allowed *allow.List, logger *slog.Logger) (*connprofile.Set, error) {
	if path == "" {
		return nil, nil
	}
	set, err := connprofile.Load(path, connprofile.Options{Control: allowed.Control, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("BAROMETER_CONNECTION_PROFILES: %w", err)
	}
	logger.Info("connection profiles loaded", "file", path, "profiles", set.Names())
	return set, nil
}

// connectKube builds the scaler's one Kubernetes discovery, shared by every
// k8s:// target. Without a configuration the scaler still serves every
// other target, and refuses k8s:// ones saying why; a kubeconfig that is
// set but unreadable is refused the same way and logged, never its
// contents.
func connectKube(kubeconfig string, victimHints bool, logger *slog.Logger) (trigger.Kube, *hintWriter) {
	client, err := kube.Connect(kubeconfig)
	if err != nil {
		if !errors.Is(err, kube.ErrNoConfig) {
			logger.Warn("Kubernetes unavailable: k8s:// targets are refused", "err", err)
		}
		return trigger.Kube{Unavailable: err}, nil
	}
	k := trigger.Kube{Discovery: kube.NewDiscovery(client), Hints: victimHints}
	if !victimHints {
		return k, nil
	}
	return k, &hintWriter{victim.New(kube.NewPatcher(client))}
}

// hintWriter gives each target that asks for victim hints its ranker.
type hintWriter struct{ *victim.Hints }

// after is the registry's After: nil (nothing to consume) for a target
// without hints, and on a nil writer (hints off, where the schema refuses
// them anyway).
func (h *hintWriter) after(tr *trigger.Trigger) func(context.Context, pressure.Observation, signal.Input) {
	ns, on := tr.VictimHints()
	if h == nil || !on {
		return nil
	}
	return h.For(ns, !tr.Policy.Replicas()).Sample
}

// newSchema is the trigger language this binary speaks: its source kinds
// and their keys. Addresses that metadata names are reached only when the
// allow-list admits them.
//
// push is the OTLP store the otlp sources read; nil when the receiver is
// off, and the otlp source is then refused.
func newSchema(allowed *allow.List, profiles *connprofile.Set, k trigger.Kube, push *store.Store) *trigger.Schema {
	return trigger.NewSchema(trigger.Host(), trigger.Scrape(allowed, profiles, k), trigger.Prometheus(allowed, profiles), trigger.OTLP(push))
}
