// Package tlstest generates throwaway certificates and writes them to disk
// for TLS tests.
//
//	ca := tlstest.NewCA(t)
//	certPEM, keyPEM := ca.Issue(t, "server", "127.0.0.1", "localhost")
//	dir := t.TempDir()
//	tlstest.WriteFiles(t, dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.CertPEM})
//	clientCert := ca.IssueKeyPair(t, "client")
//	clientConfig := &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{clientCert}}
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a self-signed certificate authority.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// NewCA returns a new CA (ECDSA P-256, valid for a day).
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "tlstest CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("tlstest: create CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("tlstest: parse CA: %v", err)
	}
	return &CA{Cert: cert, CertPEM: pemEncode("CERTIFICATE", der), key: key}
}

// Pool returns a pool holding only the CA certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issue returns a PEM certificate and PKCS#8 key signed by ca, usable for
// both server and client authentication. hosts become IP or DNS SANs.
func (ca *CA) Issue(t testing.TB, commonName string, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("tlstest: issue %q: %v", commonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("tlstest: marshal key: %v", err)
	}
	return pemEncode("CERTIFICATE", der), pemEncode("PRIVATE KEY", keyDER)
}

// IssueKeyPair is Issue returning a tls.Certificate, e.g. for a client's
// tls.Config.Certificates.
func (ca *CA) IssueKeyPair(t testing.TB, commonName string, hosts ...string) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(ca.Issue(t, commonName, hosts...))
	if err != nil {
		t.Fatalf("tlstest: key pair: %v", err)
	}
	return c
}

// WriteFiles writes each name to dir in place (os.WriteFile).
func WriteFiles(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatalf("tlstest: %v", err)
		}
	}
}

// WriteSecret updates dir the way the kubelet updates a secret volume:
// the files go into a new hidden directory, the "..data" symlink is
// atomically renamed to point to it, the previous hidden directory is
// removed, and each name is a symlink to "..data/name". Call it again to
// rotate.
func WriteSecret(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("tlstest: %v", err)
		}
	}
	ts, err := os.MkdirTemp(dir, "..ts_")
	check(err)
	WriteFiles(t, ts, files)
	dataLink := filepath.Join(dir, "..data")
	old, _ := os.Readlink(dataLink) // "" on the first call
	tmpLink := filepath.Join(dir, "..data_tmp")
	check(os.Symlink(filepath.Base(ts), tmpLink))
	check(os.Rename(tmpLink, dataLink))
	if old != "" {
		check(os.RemoveAll(filepath.Join(dir, old)))
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		check(os.Symlink(filepath.Join("..data", name), link))
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("tlstest: generate key: %v", err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatalf("tlstest: serial: %v", err)
	}
	return n
}

func pemEncode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
