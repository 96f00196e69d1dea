package httpapi_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

// FuzzScalePath sends fuzzed request targets and methods through the real
// handler, read as the server reads a request line (http.ReadRequest; a
// line it refuses never reaches the handler). Whatever the path, the
// answer is JSON: 200 (or 503, stale) for a known target or a listing (an
// array), 404 for an unknown one or an unknown path, 400 for a bad one,
// 405 for a method other than GET and HEAD; every error an object with an
// "error". Never a panic, a redirect or a plain-text body.
func FuzzScalePath(f *testing.F) {
	for _, seed := range []struct{ method, target string }{
		{"GET", "/scale/apps/busy"},
		{"GET", "/scale/apps/stale"},
		{"GET", "/scale/apps/unknown"},
		{"HEAD", "/scale"},
		{"POST", "/scale/apps/busy"},
		{"GET", "/scale/apps%2Fx/busy"},
		{"GET", "/scale/apps/busy/extra"},
		{"GET", "/scale/../targets"},
		{"GET", "/targets"},
		{"GET", "/events"},
		{"GET", "/scale//busy"},
		{"GET", "/scale/./apps/busy"},
		{"GET", "/scale/apps/busy?x=1#f"},
		{"GET", "http://example/scale/apps/busy"},
		{"GET", "/scale/%ff%fe/%00"},
		{"CONNECT", "example:443"},
		{"OPTIONS", "*"},
	} {
		f.Add(seed.method, seed.target)
	}
	fx := newFixture(f, map[string]*registrytest.Script{"busy": busy(), "stale": failing()})
	fx.use(f, registry.Ref{Namespace: "apps", Name: "busy"}, script("busy"))
	fx.use(f, registry.Ref{Namespace: "apps", Name: "stale"}, script("stale"))
	f.Fuzz(func(t *testing.T, method, target string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: scaler\r\n\r\n")))
		if err != nil {
			return // the server answers 400 itself
		}
		if req.Method == http.MethodOptions && req.RequestURI == "*" {
			return // the server answers OPTIONS * itself
		}
		rec := httptest.NewRecorder()
		fx.handler.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusServiceUnavailable, http.StatusNotFound, http.StatusBadRequest, http.StatusMethodNotAllowed:
		default:
			t.Fatalf("%s %q: status %d: %s", method, target, rec.Code, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %q: status %d, Content-Type %q: %s", method, target, rec.Code, ct, rec.Body)
		}
		// A listing (/targets, /events) is a JSON array; every other answer,
		// and every error, a JSON object.
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: status %d, not JSON: %s", method, target, rec.Code, rec.Body)
		}
		if rec.Code == http.StatusOK || rec.Code == http.StatusServiceUnavailable {
			return
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s %q: status %d, not a JSON object (%v): %s", method, target, rec.Code, err, rec.Body)
		}
		if _, ok := body["error"]; !ok {
			t.Fatalf("%s %q: status %d without an error: %s", method, target, rec.Code, rec.Body)
		}
	})
}
