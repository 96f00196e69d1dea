package promclient

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
)

// TestExtrasReachTheServer sends a trigger's query parameters and custom
// headers to a real HTTP server, on the GET and the POST form alike.
func TestExtrasReachTheServer(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" dedup="+r.URL.Query().Get("dedup")+" query="+r.FormValue("query")+" x-client="+r.Header.Get("X-Client-Id"))
		fmt.Fprint(w, oneSeries)
	}))
	defer srv.Close()
	c, err := New(Options{
		ServerAddress:   srv.URL,
		QueryParameters: map[string]string{"dedup": "true"},
		CustomHeaders:   map[string]string{"x-client-id": "shop"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if _, _, _, err := c.API.Query(context.Background(), "act", time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	if want := "POST dedup=true query=act x-client=shop"; len(got) != 1 || got[0] != want {
		t.Errorf("server saw %q, want [%q]", got, want)
	}
}

func TestExtrasRefused(t *testing.T) {
	set, err := connprofile.Parse([]byte(`profiles: [{name: p, url: "http://prom:9090", namespaces: ["*"], tenant: team-a}]`), "", connprofile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := set.Resolve("p", "", "ns")
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"api parameter":    {QueryParameters: map[string]string{"time": "0"}},
		"empty parameter":  {QueryParameters: map[string]string{"": "x"}},
		"credentials":      {CustomHeaders: map[string]string{"authorization": "Bearer x"}},
		"cookie":           {CustomHeaders: map[string]string{"Cookie": "a=b"}},
		"bad header name":  {CustomHeaders: map[string]string{"a b": "x"}},
		"bad header value": {CustomHeaders: map[string]string{"X-A": "a\nb"}},
		"tenant header":    {CustomHeaders: map[string]string{"x-scope-orgid": "team-b"}, Profile: tenant},
	} {
		o.ServerAddress = "http://prom:9090"
		_, err := New(o)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "Bearer x") {
			t.Errorf("%s: the error quotes the header's value: %v", name, err)
		}
		var tenantHeader string
		if o.Profile != nil {
			tenantHeader = o.Profile.TenantHeader()
		}
		if check := CheckRequest(o.QueryParameters, o.CustomHeaders, tenantHeader); check == nil || check.Error() != err.Error() {
			t.Errorf("%s: CheckRequest = %v, want New's refusal %v", name, check, err)
		}
	}
}
