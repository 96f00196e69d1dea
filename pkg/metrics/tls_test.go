package metrics_test

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/metrics"
)

// The certificate's expiry is absent until a certificate is observed (a
// plain scaler must not look like one whose certificate expired in 1970),
// then follows every observed certificate.
func TestTLSCertificateExpiry(t *testing.T) {
	const name = "barometer_tls_certificate_expiry_timestamp_seconds"
	f := newFixture(t, nil)
	m := metrics.New(f.reg)
	if _, ok := scrape(t, m)[name]; ok {
		t.Fatalf("%s present before any certificate", name)
	}
	for _, notAfter := range []time.Time{
		time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), // renewed
	} {
		m.ObserveTLSCertificate(&x509.Certificate{NotAfter: notAfter})
		if got := value(t, scrape(t, m), name, nil); got != float64(notAfter.Unix()) {
			t.Errorf("%s = %v, want %d", name, got, notAfter.Unix())
		}
	}
}
