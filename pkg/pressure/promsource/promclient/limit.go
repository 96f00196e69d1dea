package promclient

import (
	"fmt"
	"io"
	"net/http"
)

// limitTransport bounds how much of a response body is read: a query that
// matches far more series than intended fails its sample instead of
// growing the scaler's memory with the server's answer.
type limitTransport struct {
	next http.RoundTripper
	max  int64
}

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, max: t.max, left: t.max}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	max, left int64
}

// Read reads up to the limit and fails past it; reading one byte beyond
// tells a body of exactly the limit from a larger one.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), b.tooLarge()
	}
	return n, err
}

func (b *limitedBody) tooLarge() error {
	return fmt.Errorf("response body larger than %d bytes", b.max)
}
