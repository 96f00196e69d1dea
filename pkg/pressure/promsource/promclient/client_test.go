package promclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

const oneSeries = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1700000000,"3"]}]}}`

func TestServerTimeoutIsAPrometheusDuration(t *testing.T) {
	for in, want := range map[time.Duration]string{
		2999999 * time.Microsecond: "2s",
		749999 * time.Microsecond:  "749ms",
		time.Minute:                "1m0s",
		0:                          "0s",
	} {
		got := ServerTimeout(in).String()
		if got != want {
			t.Errorf("ServerTimeout(%v) = %s, want %s", in, got, want)
		}
		if _, err := model.ParseDuration(got); err != nil {
			t.Errorf("%s: %v", got, err)
		}
	}
}

// TestTimeoutOption: a query given a server timeout sends it, in a form
// Prometheus' own duration parser reads; without one it sends none.
func TestTimeoutOption(t *testing.T) {
	var gotTimeout []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		gotTimeout = append(gotTimeout, r.Form.Get("timeout"))
		fmt.Fprint(w, oneSeries)
	}))
	defer srv.Close()
	c, err := New(Options{ServerAddress: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	for _, timeout := range []time.Duration{ServerTimeout(2500 * time.Millisecond), 0} {
		if _, _, _, err := c.API.Query(context.Background(), "q", time.Unix(1700000000, 0), TimeoutOption(timeout)...); err != nil {
			t.Fatal(err)
		}
	}
	if len(gotTimeout) != 2 {
		t.Fatalf("server saw %d queries, want 2", len(gotTimeout))
	}
	if d, err := model.ParseDuration(gotTimeout[0]); err != nil || time.Duration(d) != 2*time.Second {
		t.Errorf("evaluation timeout sent for a 2.5s budget = %q, want 2s", gotTimeout[0])
	}
	if gotTimeout[1] != "" {
		t.Errorf("evaluation timeout sent without one = %q, want none", gotTimeout[1])
	}
}

// TestQueryRangeKeepsTheBound: a range query goes through the plain
// client, under its response bound, redirect policy and address vetting.
func TestQueryRangeKeepsTheBound(t *testing.T) {
	const matrix = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1700000000,"3"]]}]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		switch r.Form.Get("query") {
		case "big":
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[`+strings.Repeat(" ", 4096)+`]}}`)
		case "moved":
			http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
		default:
			fmt.Fprint(w, matrix)
		}
	}))
	defer srv.Close()
	refuse := errors.New("refused by the allow-list")
	ask := func(query string, control func(string, string, syscall.RawConn) error) (model.Value, error) {
		return QueryRange(context.Background(), RangeQuery{ServerAddress: srv.URL, Query: query, MaxResponseBytes: 1024, Control: control,
			Range: v1.Range{Start: time.Unix(1700000000, 0), End: time.Unix(1700000060, 0), Step: 15 * time.Second}})
	}
	if v, err := ask("load", nil); err != nil || v.(model.Matrix).Len() != 1 {
		t.Fatalf("range query: %v, %v", v, err)
	}
	if _, err := ask("big", nil); err == nil || !strings.Contains(err.Error(), "larger than 1024 bytes") {
		t.Errorf("oversized response: err = %v", err)
	}
	if _, err := ask("moved", nil); err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("redirect: err = %v", err)
	}
	if _, err := ask("load", func(string, string, syscall.RawConn) error { return refuse }); !errors.Is(err, refuse) {
		t.Errorf("Control: err = %v, want the refusal", err)
	}
}

// TestLimitedBodyAtTheBound: a body of exactly the bound is read whole;
// one byte more fails.
func TestLimitedBodyAtTheBound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", len(r.URL.Path)-1))
	}))
	defer srv.Close()
	hc := newHTTPClient(nil, 8, 0)
	defer hc.CloseIdleConnections()
	for path, wantErr := range map[string]bool{"/12345678": false, "/123456789": true} {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if (err != nil) != wantErr || !wantErr && len(b) != 8 {
			t.Errorf("body of %d bytes under a bound of 8: read %d, err = %v", len(path)-1, len(b), err)
		}
	}
}

// TestKeyTellsClientsApart: clients the server would answer differently
// have different keys, so the prometheus sources never share their
// answers; equal ones have the same.
func TestKeyTellsClientsApart(t *testing.T) {
	base := Options{ServerAddress: "http://prom:9090"}
	key := func(o Options) string {
		t.Helper()
		c, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		return c.Key()
	}
	if first, second := key(base), key(base); first != second {
		t.Error("equal options: different keys")
	}
	if key(base) != key(Options{ServerAddress: base.ServerAddress, MaxResponseBytes: DefaultMaxResponseBytes}) {
		t.Error("the default bound spelt out: a different key")
	}
	seen := map[string]string{key(base): "base"}
	for name, o := range map[string]Options{
		"server":     {ServerAddress: "http://prom:9091"},
		"parameters": {ServerAddress: base.ServerAddress, QueryParameters: map[string]string{"dedup": "false"}},
		"headers":    {ServerAddress: base.ServerAddress, CustomHeaders: map[string]string{"X-Client-Id": "shop"}},
		"bound":      {ServerAddress: base.ServerAddress, MaxResponseBytes: 1024},
	} {
		k := key(o)
		if other, ok := seen[k]; ok {
			t.Errorf("%s: the same key as %s", name, other)
		}
		seen[k] = name
	}
}
