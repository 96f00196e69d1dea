package receiver

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/barometer-scaler/barometer/pkg/envconfig"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// PushConfig is everything the push path needs from the process's
// configuration: the receiver's listeners and TLS, its credentials file,
// and the store's caps. Both addresses empty: no receiver.
type PushConfig struct {
	Config
	Credentials string
	Store       store.Options
}

// PushConfigFrom maps the process's configuration onto the push path's.
func PushConfigFrom(c envconfig.Config) PushConfig {
	return PushConfig{
		Config: Config{GRPCAddress: c.OTLPGRPCAddr, HTTPAddress: c.OTLPHTTPAddr,
			TLSCertFile: c.OTLPTLSCertFile, TLSKeyFile: c.OTLPTLSKeyFile, ClientCAFile: c.OTLPTLSClientCAFile,
			MaxRequestBytes: c.OTLPMaxRequestBytes, MaxDecodedBytes: c.OTLPMaxDecodedBytes,
			MaxOpenRequests: c.OTLPMaxOpenRequests, MaxOpenRequestsPerCredential: c.OTLPMaxOpenRequestsPerCredential,
			MaxConcurrentRequests: c.OTLPMaxConcurrentRequests, MinBodyBytesPerSecond: c.OTLPMinBodyBytesPerSecond},
		Credentials: c.OTLPCredentials,
		Store: store.Options{MaxSeries: c.OTLPMaxSeries, MaxSeriesPerNamespace: c.OTLPMaxSeriesPerNamespace,
			MaxMemoryBytes: int64(c.OTLPMaxMemoryBytes), MaxMemoryBytesPerNamespace: int64(c.OTLPMaxMemoryBytesPerNamespace),
			MaxPointsPerRequest: c.OTLPMaxPointsPerRequest},
	}
}

// Push is the process's push path: the one store, which the receiver
// writes and every otlp source reads, and the credentials. It is built
// before the target registry (whose schema needs the store) and listens
// once the metrics registry exists (which needs the target registry).
type Push struct {
	cfg     PushConfig
	store   *store.Store // nil when the receiver is off
	creds   *Credentials
	pending pendingCollectors
}

// NewPush builds the store and loads the credentials when the receiver is
// on. A credentials file that cannot be used stops the start.
func NewPush(cfg PushConfig, logger *slog.Logger) (*Push, error) {
	p := &Push{cfg: cfg}
	if cfg.GRPCAddress == "" && cfg.HTTPAddress == "" {
		return p, nil
	}
	st, err := store.New(cfg.Store, &p.pending)
	if err != nil {
		return nil, err
	}
	creds, err := LoadCredentials(cfg.Credentials, &p.pending, logger)
	if err != nil {
		return nil, fmt.Errorf("BAROMETER_OTLP_CREDENTIALS: %w", err)
	}
	p.store, p.creds = st, creds
	return p, nil
}

// Store is the store the otlp sources read; nil when the receiver is off.
func (p *Push) Store() *store.Store { return p.store }

// Listen binds the receiver's listeners and registers the push path's
// metrics with register; nil when the receiver is off.
func (p *Push) Listen(register func(prometheus.Collector) error, logger *slog.Logger) (*Receiver, error) {
	if p.store == nil {
		return nil, nil
	}
	recv, err := New(p.cfg.Config, p.store, p.creds, &p.pending, logger)
	if err != nil {
		return nil, err
	}
	for _, c := range p.pending {
		if err := register(c); err != nil {
			return nil, fmt.Errorf("otlp metrics: %w", err)
		}
	}
	logger.Info("OTLP receiver listening", "grpc", AddrText(recv.GRPCAddr()), "http", AddrText(recv.HTTPAddr()),
		"tls", p.cfg.TLSCertFile != "", "mtls", p.cfg.ClientCAFile != "")
	return recv, nil
}

// AddrText is a listener's address, "" for none.
func AddrText(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// pendingCollectors is a prometheus.Registerer that only keeps what is
// registered, for Listen to register once the metrics registry exists.
type pendingCollectors []prometheus.Collector

func (p *pendingCollectors) Register(c prometheus.Collector) error {
	*p = append(*p, c)
	return nil
}

func (p *pendingCollectors) MustRegister(cs ...prometheus.Collector) { *p = append(*p, cs...) }

func (p *pendingCollectors) Unregister(prometheus.Collector) bool { return false }
