package promclient

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/prometheus/common/config"
	"golang.org/x/net/http/httpguts"
)

// apiParams are the parameters client_golang's query call sends itself:
// a query parameter of the same name would change what is asked.
var apiParams = []string{"query", "time", "timeout", "start", "end", "step", "limit", "stats"}

// extrasTransport adds a trigger's query parameters and custom headers to
// every request, before the profile's transport adds its credentials and
// tenant (which therefore win over anything a trigger could send).
type extrasTransport struct {
	next    http.RoundTripper
	params  url.Values
	headers http.Header
}

func (t extrasTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if len(t.params) > 0 {
		q := req.URL.Query()
		for k, vs := range t.params {
			q[k] = append(q[k], vs...)
		}
		req.URL.RawQuery = q.Encode()
	}
	for k, vs := range t.headers {
		req.Header[k] = append(req.Header[k], vs...)
	}
	return t.next.RoundTrip(req)
}

func (t extrasTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// extras checks the options' query parameters and custom headers.
// tenantHeader is the profile's, which a trigger may not set.
func extras(params, headers map[string]string, tenantHeader string) (url.Values, http.Header, error) {
	var v url.Values
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch {
		case k == "":
			return nil, nil, errors.New("promclient: a query parameter has no name")
		case slices.Contains(apiParams, k):
			return nil, nil, fmt.Errorf("promclient: query parameter %q is the query API's own", k)
		}
		if v == nil {
			v = url.Values{}
		}
		v.Set(k, params[k])
	}
	var h http.Header
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		name := http.CanonicalHeaderKey(k)
		_, reserved := config.ReservedHeaders[name]
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			return nil, nil, fmt.Errorf("promclient: custom header %q is not a header name", k)
		case reserved || name == "Cookie" || name == "Accept":
			return nil, nil, fmt.Errorf("promclient: custom header %q cannot be set: it carries credentials or shapes the request; credentials belong in a connection profile", name)
		case tenantHeader != "" && name == tenantHeader:
			return nil, nil, fmt.Errorf("promclient: custom header %q is the connection profile's tenant header", name)
		case !httpguts.ValidHeaderFieldValue(headers[k]):
			return nil, nil, fmt.Errorf("promclient: custom header %q: not a valid header value", name)
		}
		if h == nil {
			h = http.Header{}
		}
		h.Set(name, headers[k])
	}
	return v, h, nil
}

// CheckRequest reports query parameters or custom headers New would
// refuse, so a trigger parser can refuse them as it parses. tenantHeader
// is the connection profile's, which a trigger may not set.
func CheckRequest(params, headers map[string]string, tenantHeader string) error {
	_, _, err := extras(params, headers, tenantHeader)
	return err
}
