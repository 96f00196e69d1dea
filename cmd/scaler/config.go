package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/trigger"
	"github.com/caarlos0/env/v11"
)

// config is the server's configuration, read from the environment.
type config struct {
	GRPCAddr       string        `env:"BAROMETER_GRPC_ADDR" envDefault:":6000"`
	HTTPAddr       string        `env:"BAROMETER_HTTP_ADDR" envDefault:":8080"`
	SampleInterval time.Duration `env:"BAROMETER_SAMPLE_INTERVAL" envDefault:"5s"`
	// DefaultTarget is the trigger metadata of the target served at /scale,
	// as key=value pairs separated by ';' (the host source when empty).
	DefaultTarget map[string]string `env:"BAROMETER_DEFAULT_TARGET" envSeparator:";" envKeyValSeparator:"="`
	// AllowedTargets admits the addresses trigger metadata may name (CIDRs,
	// host patterns, !CIDR denials); see pkg/allow.
	AllowedTargets string        `env:"BAROMETER_ALLOWED_TARGETS" envDefault:"*.{namespace}.svc,*.{namespace}.svc.cluster.local"`
	IdleTimeout    time.Duration `env:"BAROMETER_IDLE_TIMEOUT" envDefault:"10m"`
	// AuditSize is how many decisions /events keeps per target.
	AuditSize int `env:"BAROMETER_AUDIT_SIZE" envDefault:"100"`
	// The limits of what callers can make the scaler hold (pkg/registry).
	MaxTargets             int           `env:"BAROMETER_MAX_TARGETS" envDefault:"1000"`
	MaxTargetsPerNamespace int           `env:"BAROMETER_MAX_TARGETS_PER_NAMESPACE" envDefault:"100"`
	MaxRefsPerTarget       int           `env:"BAROMETER_MAX_REFS_PER_TARGET" envDefault:"1000"`
	ShutdownTimeout        time.Duration `env:"BAROMETER_SHUTDOWN_TIMEOUT" envDefault:"20s"`
	// ShutdownDelay is how long /readyz reads 503 before streams end and
	// the servers drain.
	ShutdownDelay   time.Duration `env:"BAROMETER_SHUTDOWN_DELAY" envDefault:"5s"`
	TLSCertFile     string        `env:"BAROMETER_TLS_CERT_FILE"`
	TLSKeyFile      string        `env:"BAROMETER_TLS_KEY_FILE"`
	TLSClientCAFile string        `env:"BAROMETER_TLS_CLIENT_CA_FILE"`
	// ConnectionProfiles is the path of the connection profile file
	// (pkg/pressure/connprofile), mounted from a Secret; empty: none.
	ConnectionProfiles string `env:"BAROMETER_CONNECTION_PROFILES"`
	// Kubeconfig is the kubeconfig file k8s:// targets reach Kubernetes
	// through when the scaler runs outside a pod; in a pod, unset, the
	// service account is used (pkg/pressure/kube).
	Kubeconfig string `env:"BAROMETER_KUBECONFIG"`
	// VictimHints lets triggers ask for victimHints: the scaler then
	// patches the pod-deletion-cost annotation of their pods (pkg/victim).
	VictimHints bool `env:"BAROMETER_VICTIM_HINTS" envDefault:"false"`
	// OTLP is the OTLP push receiver (docs/otlp.md): off unless an address
	// is set.
	OTLP      otlpConfig
	LogLevel  string `env:"BAROMETER_LOG_LEVEL" envDefault:"info"`
	LogFormat string `env:"BAROMETER_LOG_FORMAT" envDefault:"text"`
}

func loadConfig() (config, error) {
	cfg, err := env.ParseAs[config]()
	if err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	return cfg, cfg.validate()
}

func (c config) validate() error {
	if c.SampleInterval < trigger.MinInterval || c.SampleInterval > trigger.MaxInterval {
		return fmt.Errorf("BAROMETER_SAMPLE_INTERVAL %s: allowed from %s to %s, as the sampleInterval key", c.SampleInterval, trigger.MinInterval, trigger.MaxInterval)
	}
	for _, l := range []struct {
		name string
		v    int
	}{{"BAROMETER_MAX_TARGETS", c.MaxTargets}, {"BAROMETER_MAX_TARGETS_PER_NAMESPACE", c.MaxTargetsPerNamespace}, {"BAROMETER_MAX_REFS_PER_TARGET", c.MaxRefsPerTarget}} {
		if l.v < 1 || l.v > 1000000 {
			return fmt.Errorf("%s %d: allowed from 1 to 1000000", l.name, l.v)
		}
	}
	if c.IdleTimeout < time.Minute {
		return fmt.Errorf("BAROMETER_IDLE_TIMEOUT %s: allowed 1m or more", c.IdleTimeout)
	}
	if c.AuditSize < 1 || c.AuditSize > 100000 {
		return fmt.Errorf("BAROMETER_AUDIT_SIZE %d: allowed from 1 to 100000", c.AuditSize)
	}
	if c.ShutdownDelay < 0 || c.ShutdownDelay > time.Minute {
		return fmt.Errorf("BAROMETER_SHUTDOWN_DELAY %s: allowed from 0s to 1m", c.ShutdownDelay)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return fmt.Errorf("BAROMETER_TLS_CERT_FILE and BAROMETER_TLS_KEY_FILE must be set together")
	}
	if c.TLSClientCAFile != "" && c.TLSCertFile == "" {
		return fmt.Errorf("BAROMETER_TLS_CLIENT_CA_FILE needs BAROMETER_TLS_CERT_FILE and BAROMETER_TLS_KEY_FILE")
	}
	if err := c.OTLP.validate(); err != nil {
		return err
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("BAROMETER_LOG_FORMAT %q: allowed text or json", c.LogFormat)
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("BAROMETER_LOG_LEVEL %q: allowed debug, info, warn or error", s)
	}
	return l, nil
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	level, _ := parseLevel(cfg.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(cfg.LogFormat, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
