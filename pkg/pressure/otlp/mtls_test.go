package otlp_test

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc/credentials"

	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/receiver"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

// A client certificate verified against the client CA names its
// credential: the SDK pushes with it over gRPC and HTTP; a certificate of
// a name no credential lists, or of another CA, is refused.
func TestMutualTLS(t *testing.T) {
	ca, stranger := tlstest.NewCA(t), tlstest.NewCA(t)
	dir := t.TempDir()
	certPEM, keyPEM := ca.Issue(t, "barometer", "127.0.0.1")
	tlstest.WriteFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.CertPEM})
	h := newHarness(t, store.Options{}, receiver.Config{
		TLSCertFile: filepath.Join(dir, "tls.crt"), TLSKeyFile: filepath.Join(dir, "tls.key"), ClientCAFile: filepath.Join(dir, "ca.crt"),
	}, `  - name: collector
    client_certificate: collector.team-a
    namespaces: [team-a]
`)
	collector := ca.IssueKeyPair(t, "collector.team-a")
	unknown := ca.IssueKeyPair(t, "collector.team-z")
	foreign := stranger.IssueKeyPair(t, "collector.team-a")

	push := func(transport string, cert tls.Certificate) error {
		tlsCfg := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}}
		var exp sdkmetric.Exporter
		var err error
		if transport == "grpc" {
			exp, err = otlpmetricgrpc.New(context.Background(), otlpmetricgrpc.WithEndpoint(h.recv.GRPCAddr().String()),
				otlpmetricgrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)), otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false}))
		} else {
			exp, err = otlpmetrichttp.New(context.Background(), otlpmetrichttp.WithEndpoint(h.recv.HTTPAddr().String()),
				otlpmetrichttp.WithTLSClientConfig(tlsCfg), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
		}
		if err != nil {
			t.Fatal(err)
		}
		s := newSDK(t, exp, podResource("team-a", "shop", "shop-"+transport))
		g, _ := s.provider.Meter("m").Float64Gauge(exposition.Activations)
		g.Record(context.Background(), 42)
		return s.flush(t)
	}
	for _, transport := range []string{"grpc", "http"} {
		if err := push(transport, collector); err != nil {
			t.Fatalf("%s with the collector's certificate: %v", transport, err)
		}
		for name, cert := range map[string]tls.Certificate{"unknown name": unknown, "foreign CA": foreign} {
			err := push(transport, cert)
			if err == nil {
				t.Fatalf("%s with a certificate of %s: accepted", transport, name)
			}
			if name == "unknown name" && !strings.Contains(strings.ToLower(err.Error()), "unauthenticated") && !strings.Contains(err.Error(), "401") {
				t.Errorf("%s with a certificate of %s: %v, want unauthenticated", transport, name, err)
			}
		}
	}
	obs, err := newSource(t, h, "team-a", "shop", time.Now, time.Minute).Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Replicas) != 2 {
		t.Fatalf("replicas %+v, want the two pushes with the collector's certificate", obs.Replicas)
	}
}
