package connprofile

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// namingTransport names the profile in every error of its transport, so a
// failed handshake says which profile's TLS settings to look at, as a 401
// names the profile whose credentials were refused.
type namingTransport struct {
	next    http.RoundTripper
	profile string
	hasCA   bool // tls_config.ca_file is set
}

func (t *namingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, &transportError{profile: t.profile, hint: t.hint(err), err: err}
	}
	return resp, nil
}

// CloseIdleConnections passes on to the transport that holds them.
func (t *namingTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// hint says which of the profile's settings a TLS failure points at.
func (t *namingTransport) hint(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
	)
	switch {
	case errors.As(err, &unknownCA) && t.hasCA:
		return "the server's certificate is not signed by a CA in the profile's tls_config.ca_file"
	case errors.As(err, &unknownCA):
		return "the profile sets no tls_config.ca_file, so only the system's CAs are trusted"
	case errors.As(err, &hostname):
		return "the server's certificate is not for the name checked: the URL's host, or the profile's tls_config.server_name"
	case refusedCertificate(err.Error()):
		return "the server refused the client certificate: the profile's tls_config.cert_file and key_file"
	}
	return ""
}

// refusedCertificate says the server sent a TLS alert about the client's
// certificate (bad certificate, unknown CA, certificate required): the
// alert's type is not exported, and net/http may wrap it as text.
func refusedCertificate(msg string) bool {
	i := strings.Index(msg, "remote error: tls: ")
	return i >= 0 && strings.Contains(msg[i:], "certificate")
}

// transportError is a request through a profile that failed before any
// answer: it names the profile, and for a TLS failure the setting to look
// at. It never carries a credential.
type transportError struct {
	profile string
	hint    string
	err     error
}

func (e *transportError) Error() string {
	s := fmt.Sprintf("connection profile %q: %v", e.profile, e.err)
	if e.hint != "" {
		s += " (" + e.hint + ")"
	}
	return s
}

func (e *transportError) Unwrap() error { return e.err }

// Timeout keeps what net/http's url.Error asks of the error it wraps.
func (e *transportError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.err, &t) && t.Timeout()
}
