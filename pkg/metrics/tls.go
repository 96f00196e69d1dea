package metrics

import (
	"crypto/x509"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// certExpiry reports the serving certificate's NotAfter. It reports nothing
// until a certificate is observed, so a plain (non-TLS) scaler has no
// series rather than a fake zero that an expiry alert would fire on.
type certExpiry struct {
	desc     *prometheus.Desc
	notAfter atomic.Pointer[float64] // Unix seconds; nil before the first certificate
}

func newCertExpiry() *certExpiry {
	return &certExpiry{desc: prometheus.NewDesc(
		prometheus.BuildFQName(Namespace, "tls", "certificate_expiry_timestamp_seconds"),
		"NotAfter of the gRPC server's TLS certificate (its leaf), in Unix seconds; absent without TLS.",
		nil, nil)}
}

func (c *certExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *certExpiry) Collect(ch chan<- prometheus.Metric) {
	if v := c.notAfter.Load(); v != nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, *v)
	}
}

// ObserveTLSCertificate records the serving certificate's expiry. It is
// meant for tlsreload.OnCertificate, which calls it at start and on every
// reload, so the metric follows a renewed certificate.
func (m *Metrics) ObserveTLSCertificate(leaf *x509.Certificate) {
	v := float64(leaf.NotAfter.Unix())
	m.certExpiry.notAfter.Store(&v)
}
