package receiver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// serverTLS builds the listeners' TLS: nil without a certificate. With a
// client CA, a client certificate is verified when given (a token push
// needs none) and then names the push's credential.
func serverTLS(cfg Config) (*tls.Config, error) {
	if cfg.TLSCertFile == "" && cfg.TLSKeyFile == "" {
		if cfg.ClientCAFile != "" {
			return nil, errors.New("otlp receiver: a client CA needs the receiver's own certificate (TLSCertFile, TLSKeyFile)")
		}
		return nil, nil
	}
	if cfg.TLSCertFile == "" || cfg.TLSKeyFile == "" {
		return nil, errors.New("otlp receiver: TLSCertFile and TLSKeyFile go together")
	}
	r := &certReloader{certFile: cfg.TLSCertFile, keyFile: cfg.TLSKeyFile}
	if _, err := r.get(nil); err != nil {
		return nil, fmt.Errorf("otlp receiver: %w", err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.get, NextProtos: []string{"h2", "http/1.1"}}
	if cfg.ClientCAFile != "" {
		pem, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("otlp receiver: client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("otlp receiver: client CA %s: no PEM certificate", cfg.ClientCAFile)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return c, nil
}

// certReloader serves the receiver's certificate, re-reading the pair when
// either file's modification time changed, and keeping the last good pair
// while the files do not load (a rotation caught halfway).
type certReloader struct {
	certFile, keyFile string

	mu       sync.Mutex
	modified [2]time.Time
	cert     *tls.Certificate
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var mod [2]time.Time
	for i, f := range []string{r.certFile, r.keyFile} {
		if st, err := os.Stat(f); err == nil {
			mod[i] = st.ModTime()
		}
	}
	if r.cert != nil && mod == r.modified {
		return r.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.cert != nil {
			return r.cert, nil
		}
		return nil, fmt.Errorf("certificate: %w", err)
	}
	r.cert, r.modified = &cert, mod
	return r.cert, nil
}
