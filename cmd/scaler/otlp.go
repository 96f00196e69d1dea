package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/barometer-scaler/barometer/pkg/metrics"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// otlpConfig is the OTLP push receiver's configuration (docs/otlp.md). It
// is off unless one of its addresses is set.
type otlpConfig struct {
	// GRPCAddr and HTTPAddr are the receiver's own listeners (OTLP's usual
	// ports are 4317 and 4318); both empty: no receiver, and the otlp
	// source is refused.
	GRPCAddr string `env:"BAROMETER_OTLP_GRPC_ADDR"`
	HTTPAddr string `env:"BAROMETER_OTLP_HTTP_ADDR"`
	// Credentials is the file of who may push and for which namespaces,
	// mounted from a Secret; required when the receiver is on.
	Credentials string `env:"BAROMETER_OTLP_CREDENTIALS"`
	// TLS of both listeners; with a client CA, client certificates
	// authenticate (mTLS).
	TLSCertFile     string `env:"BAROMETER_OTLP_TLS_CERT_FILE"`
	TLSKeyFile      string `env:"BAROMETER_OTLP_TLS_KEY_FILE"`
	TLSClientCAFile string `env:"BAROMETER_OTLP_TLS_CLIENT_CA_FILE"`
	// The store's and the receiver's caps.
	MaxSeries             int   `env:"BAROMETER_OTLP_MAX_SERIES" envDefault:"100000"`
	MaxSeriesPerNamespace int   `env:"BAROMETER_OTLP_MAX_SERIES_PER_NAMESPACE" envDefault:"20000"`
	MaxMemoryBytes        int64 `env:"BAROMETER_OTLP_MAX_MEMORY_BYTES" envDefault:"134217728"`
	MaxPointsPerRequest   int   `env:"BAROMETER_OTLP_MAX_POINTS_PER_REQUEST" envDefault:"20000"`
	MaxRequestBytes       int   `env:"BAROMETER_OTLP_MAX_REQUEST_BYTES" envDefault:"4194304"`
	MaxConcurrentRequests int   `env:"BAROMETER_OTLP_MAX_CONCURRENT_REQUESTS" envDefault:"8"`
}

func (c otlpConfig) enabled() bool { return c.GRPCAddr != "" || c.HTTPAddr != "" }

func (c otlpConfig) validate() error {
	if !c.enabled() {
		return nil
	}
	if c.Credentials == "" {
		return errors.New("BAROMETER_OTLP_CREDENTIALS: required with BAROMETER_OTLP_GRPC_ADDR or BAROMETER_OTLP_HTTP_ADDR: every push is authenticated (docs/otlp.md)")
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("BAROMETER_OTLP_TLS_CERT_FILE and BAROMETER_OTLP_TLS_KEY_FILE must be set together")
	}
	if c.TLSClientCAFile != "" && c.TLSCertFile == "" {
		return errors.New("BAROMETER_OTLP_TLS_CLIENT_CA_FILE needs BAROMETER_OTLP_TLS_CERT_FILE and BAROMETER_OTLP_TLS_KEY_FILE")
	}
	for _, l := range []struct {
		name   string
		v, max int64
	}{
		{"BAROMETER_OTLP_MAX_SERIES", int64(c.MaxSeries), 10_000_000},
		{"BAROMETER_OTLP_MAX_SERIES_PER_NAMESPACE", int64(c.MaxSeriesPerNamespace), int64(c.MaxSeries)},
		{"BAROMETER_OTLP_MAX_MEMORY_BYTES", c.MaxMemoryBytes, 64 << 30},
		{"BAROMETER_OTLP_MAX_POINTS_PER_REQUEST", int64(c.MaxPointsPerRequest), 1_000_000},
		{"BAROMETER_OTLP_MAX_REQUEST_BYTES", int64(c.MaxRequestBytes), 256 << 20},
		{"BAROMETER_OTLP_MAX_CONCURRENT_REQUESTS", int64(c.MaxConcurrentRequests), 1024},
	} {
		if l.v < 1 || l.v > l.max {
			return fmt.Errorf("%s %d: allowed from 1 to %d", l.name, l.v, l.max)
		}
	}
	return nil
}

// otlpPush is the receiver's share of serve: the one store of the
// process, which the receiver writes and every otlp source reads.
type otlpPush struct {
	cfg   otlpConfig
	store *store.Store // nil when the receiver is off
	creds *receiver.Credentials
	// pending are the store's and credentials' metrics, made before the
	// metrics registry (which needs the target registry, which needs the
	// schema, which needs the store); listen registers them.
	pending pendingCollectors
}

// newOTLPPush builds the store and loads the credentials, when the
// receiver is on. A credentials file that cannot be read stops the start.
func newOTLPPush(cfg otlpConfig, logger *slog.Logger) (*otlpPush, error) {
	p := &otlpPush{cfg: cfg}
	if !cfg.enabled() {
		return p, nil
	}
	st, err := store.New(store.Options{
		MaxSeries: cfg.MaxSeries, MaxSeriesPerNamespace: cfg.MaxSeriesPerNamespace,
		MaxMemoryBytes: cfg.MaxMemoryBytes, MaxPointsPerRequest: cfg.MaxPointsPerRequest,
	}, &p.pending)
	if err != nil {
		return nil, err
	}
	creds, err := receiver.LoadCredentials(cfg.Credentials, &p.pending, logger)
	if err != nil {
		return nil, fmt.Errorf("BAROMETER_OTLP_CREDENTIALS: %w", err)
	}
	p.store, p.creds = st, creds
	return p, nil
}

// listen binds the receiver's listeners and registers its metrics with
// the rest; nil when the receiver is off.
func (p *otlpPush) listen(m *metrics.Metrics, logger *slog.Logger) (*receiver.Receiver, error) {
	if p.store == nil {
		return nil, nil
	}
	c := p.cfg
	recv, err := receiver.New(receiver.Config{
		GRPCAddress: c.GRPCAddr, HTTPAddress: c.HTTPAddr,
		TLSCertFile: c.TLSCertFile, TLSKeyFile: c.TLSKeyFile, ClientCAFile: c.TLSClientCAFile,
		MaxRequestBytes: c.MaxRequestBytes, MaxConcurrentRequests: c.MaxConcurrentRequests,
	}, p.store, p.creds, &p.pending, logger)
	if err != nil {
		return nil, err
	}
	for _, col := range p.pending {
		if err := m.Register(col); err != nil {
			return nil, fmt.Errorf("otlp metrics: %w", err)
		}
	}
	logger.Info("OTLP receiver listening", "grpc", addrText(recv.GRPCAddr()), "http", addrText(recv.HTTPAddr()),
		"tls", c.TLSCertFile != "", "mtls", c.TLSClientCAFile != "")
	return recv, nil
}

func addrText(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// pendingCollectors is a prometheus.Registerer that only keeps what is
// registered, for listen to register once the metrics registry exists.
type pendingCollectors []prometheus.Collector

func (p *pendingCollectors) Register(c prometheus.Collector) error {
	*p = append(*p, c)
	return nil
}

func (p *pendingCollectors) MustRegister(cs ...prometheus.Collector) { *p = append(*p, cs...) }

func (p *pendingCollectors) Unregister(prometheus.Collector) bool { return false }
