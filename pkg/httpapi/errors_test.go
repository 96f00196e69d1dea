package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
)

func TestMethodsOtherThanGETAre405(t *testing.T) {
	f := newFixture(t, map[string]*registrytest.Script{"busy": busy()})
	f.use(t, registry.Ref{}, script("busy"))
	for _, path := range []string{"/scale", "/scale/ns/app", "/targets", "/events", "/events/ns/app", "/livez", "/readyz", "/health/signal"} {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			r := f.do(t, method, path)
			wantError(t, r, http.StatusMethodNotAllowed, method, path, "use GET")
			if allow := r.header.Get("Allow"); allow != "GET, HEAD" {
				t.Errorf("%s %s: Allow %q", method, path, allow)
			}
		}
	}
	if r := f.do(t, http.MethodHead, "/scale"); r.code != http.StatusOK {
		t.Errorf("HEAD /scale: %d, want 200", r.code)
	}
}

func TestUnknownPathsAreJSON404(t *testing.T) {
	f := newFixture(t, nil)
	for _, path := range []string{"/nope", "/scale/", "/scale/only-namespace", "/scale/a/b/c", "/targets/x"} {
		wantError(t, f.get(t, path), http.StatusNotFound, "no such endpoint", path)
	}
	wantError(t, f.do(t, http.MethodPost, "/nope"), http.StatusNotFound, "no such endpoint")
}

func TestNewWithoutRegistryPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted a nil Registry")
		}
	}()
	httpapi.New(httpapi.Config{})
}
