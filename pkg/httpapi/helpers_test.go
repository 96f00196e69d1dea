package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

const interval = 5 * time.Second

// fixture is the HTTP surface over a live registry offering the host
// source and the test's scripts (source kind "scripted", metadata key
// "script"), driven by a fake clock whose tickers fire only when told, so
// every sampler takes exactly its first sample.
type fixture struct {
	clock    *samplingtest.FakeClock
	reg      *registry.Registry
	draining atomic.Bool
	handler  http.Handler
}

func newFixture(t testing.TB, scripts map[string]*registrytest.Script, customize ...func(*httpapi.Config)) *fixture {
	t.Helper()
	sources := trigger.NewSchema(host.Kind(), registrytest.Kind("scripted", "", func(name string) *registrytest.Script { return scripts[name] }))
	f := &fixture{clock: samplingtest.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC))}
	f.reg = registrytest.NewRegistry(t, registry.Config{Schema: sources, DefaultInterval: interval, Clock: f.clock})

	cfg := httpapi.Config{Registry: f.reg, Draining: f.draining.Load}
	for _, c := range customize {
		c(&cfg)
	}
	f.handler = httpapi.New(cfg)
	return f
}

// use starts (or joins) the target for a script on behalf of ref and waits
// for its first sample attempt. A zero ref makes it the default target.
func (f *fixture) use(t testing.TB, ref registry.Ref, raw map[string]string) *registry.Target {
	t.Helper()
	md, err := f.reg.Parse(raw)
	if err != nil {
		t.Fatalf("parse %v: %v", raw, err)
	}
	var tg *registry.Target
	if ref == (registry.Ref{}) {
		tg, err = f.reg.SetDefault(md)
	} else {
		tg, err = f.reg.Acquire(ref, md)
	}
	if err != nil {
		t.Fatalf("start target: %v", err)
	}
	registrytest.WaitSamples(t, tg, 1)
	return tg
}

func script(name string) map[string]string {
	// The responsive profile: these tests read the value the signal
	// computed, which the budgeted default would raise by its headroom.
	return map[string]string{"source": "scripted", "script": name, "profile": "responsive"}
}

// response is one recorded answer.
type response struct {
	code   int
	header http.Header
	body   []byte
}

func (f *fixture) do(t *testing.T, method, path string) response {
	t.Helper()
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return response{code: rec.Code, header: rec.Header(), body: body}
}

func (f *fixture) get(t *testing.T, path string) response { return f.do(t, http.MethodGet, path) }

// decode unmarshals a JSON body, failing the test on a bad one.
func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
	return v
}

// keys returns an object's keys in the order they appear in raw.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", raw)
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// field returns one member of a JSON object.
func field(t *testing.T, raw json.RawMessage, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %s", raw)
	}
	v, ok := m[name]
	if !ok {
		t.Fatalf("no %q in %s", name, raw)
	}
	return v
}

// wantError checks an error response: the code and a JSON message that
// mentions each of wants.
func wantError(t *testing.T, r response, code int, wants ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d: %s", r.code, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	e := decode[struct {
		Error string `json:"error"`
	}](t, r)
	for _, w := range wants {
		if !strings.Contains(e.Error, w) {
			t.Errorf("error %q does not mention %q", e.Error, w)
		}
	}
}
