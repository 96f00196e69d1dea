package otlp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
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
)

// testCA issues certificates for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
	pem  []byte
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate for name (a server gets 127.0.0.1 too) as
// PEM, and as a tls.Certificate.
func (ca *testCA) issue(t *testing.T, name string, server bool) (certPEM, keyPEM []byte, pair tls.Certificate) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, pair
}

// A client certificate verified against the client CA names its
// credential: the SDK pushes with it over gRPC and HTTP; a certificate of
// a name no credential lists, or of another CA, is refused.
func TestMutualTLS(t *testing.T) {
	ca, stranger := newCA(t), newCA(t)
	dir := t.TempDir()
	certPEM, keyPEM, _ := ca.issue(t, "barometer", true)
	writeFile(t, filepath.Join(dir, "tls.crt"), string(certPEM))
	writeFile(t, filepath.Join(dir, "tls.key"), string(keyPEM))
	writeFile(t, filepath.Join(dir, "ca.crt"), string(ca.pem))
	h := newHarness(t, store.Options{}, receiver.Config{
		TLSCertFile: filepath.Join(dir, "tls.crt"), TLSKeyFile: filepath.Join(dir, "tls.key"), ClientCAFile: filepath.Join(dir, "ca.crt"),
	}, `  - name: collector
    client_certificate: collector.team-a
    namespaces: [team-a]
`)
	_, _, collector := ca.issue(t, "collector.team-a", false)
	_, _, unknown := ca.issue(t, "collector.team-z", false)
	_, _, foreign := stranger.issue(t, "collector.team-a", false)

	push := func(transport string, cert tls.Certificate) error {
		tlsCfg := &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{cert}}
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
