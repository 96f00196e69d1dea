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
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/health"
	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/scaler"
	"github.com/barometer-scaler/barometer/pkg/signalapi"
	"github.com/barometer-scaler/barometer/pkg/target"
	"github.com/barometer-scaler/barometer/pkg/tlsreload"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
)

// listening reports the bound addresses once both servers listen (tests
// bind port 0).
type listening struct{ GRPC, HTTP string }

// serve runs the scaler until ctx ends, then drains: readiness goes false,
// streams end cleanly, in-flight calls finish within ShutdownTimeout.
func serve(ctx context.Context, cfg config, logger *slog.Logger, ready chan<- listening) error {
	runCtx, stopSamplers := context.WithCancel(context.Background())
	defer stopSamplers()

	spec := cfg.AllowedTargets
	if strings.TrimSpace(spec) == "" {
		spec = allow.DefaultSpec // set but empty reads as unset
	}
	allowed, err := allow.Parse(spec)
	if err != nil {
		return err
	}
	reg := target.NewRegistry(runCtx, target.Config{
		Sources:         newSources(allowed),
		DefaultInterval: cfg.SampleInterval,
		IdleTimeout:     cfg.IdleTimeout,
		AuditSize:       cfg.AuditSize,
		Logger:          logger,
	})
	md, err := reg.Parse(cfg.DefaultTarget)
	if err != nil {
		return fmt.Errorf("BAROMETER_DEFAULT_TARGET: %w", err)
	}
	if _, err := reg.SetDefault(md); err != nil {
		return fmt.Errorf("default target: %w", err)
	}
	registryDone := make(chan struct{})
	go func() { reg.Run(runCtx); close(registryDone) }()

	grpcLis, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("BAROMETER_GRPC_ADDR: %w", err)
	}
	httpLis, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		grpcLis.Close()
		return fmt.Errorf("BAROMETER_HTTP_ADDR: %w", err)
	}

	m := metrics.New(reg, time.Now)
	opts := m.ServerOptions()
	files := tlsreload.Files{CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSKeyFile, ClientCAFile: cfg.TLSClientCAFile}
	if files.Enabled() {
		tlsCfg, err := tlsreload.NewServerConfig(runCtx, files, logger, tlsreload.OnCertificate(m.ObserveTLSCertificate))
		if err != nil {
			grpcLis.Close()
			httpLis.Close()
			return err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	grpcServer := grpc.NewServer(opts...)
	scalerServer := scaler.New(scaler.Config{Registry: reg, Logger: logger})
	externalscaler.RegisterExternalScalerServer(grpcServer, scalerServer)
	signalServer := signalapi.NewServer(reg, time.Now)
	barometerv1.RegisterSignalServiceServer(grpcServer, signalServer)
	grpcHealth := grpchealth.NewServer()
	healthpb.RegisterHealthServer(grpcServer, grpcHealth)
	reflection.Register(grpcServer)
	m.InitializeGRPC(grpcServer)

	var draining atomic.Bool
	httpServer := &http.Server{
		Handler: httpapi.New(httpapi.Config{
			Registry: reg, Metrics: m.Handler(), Now: time.Now, Draining: draining.Load,
			Logger: logger, Health: health.DefaultOptions(),
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}

	errs := make(chan error, 2)
	go func() { errs <- grpcServer.Serve(grpcLis) }()
	go func() { errs <- httpServer.Serve(httpLis) }()
	logger.Info("serving", "grpc", grpcLis.Addr().String(), "http", httpLis.Addr().String(),
		"allowedTargets", allowed.String(), "tls", files.Enabled(), "mtls", cfg.TLSClientCAFile != "", "defaultTarget", md.SamplerKey(), "version", buildVersion())
	if ready != nil {
		ready <- listening{GRPC: grpcLis.Addr().String(), HTTP: httpLis.Addr().String()}
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errs:
		logger.Error("server failed", "err", serveErr)
	}

	logger.Info("shutting down")
	draining.Store(true)
	grpcHealth.Shutdown()
	scalerServer.Shutdown()
	signalServer.Shutdown()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	stopped := make(chan struct{})
	go func() { grpcServer.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-shutdownCtx.Done():
		logger.Warn("in-flight gRPC calls did not finish in time; stopping", "timeout", cfg.ShutdownTimeout)
		grpcServer.Stop()
	}
	// HTTP requests are short reads of the cache; they get a few seconds of
	// their own, even when the gRPC drain used the whole timeout.
	httpCtx, cancelHTTP := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelHTTP()
	if err := httpServer.Shutdown(httpCtx); err != nil {
		logger.Warn("HTTP shutdown did not finish; closing connections", "err", err)
		httpServer.Close()
	}
	stopSamplers()
	<-registryDone
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && !errors.Is(serveErr, grpc.ErrServerStopped) {
		return serveErr
	}
	logger.Info("stopped")
	return nil
}

// newSources is the set of source kinds this binary offers. Addresses that
// metadata names are reached only when the allow-list admits them.
func newSources(allowed *allow.List) *target.Sources {
	s := target.NewSources()
	s.Register("host", target.ParseHost)
	s.Register(target.SourceScrape, target.ScrapeParser(allowed))
	s.Register(target.SourcePrometheus, target.PrometheusParser(allowed))
	return s
}
