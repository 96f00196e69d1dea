package promsource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

const oneReplica = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1700000000,"3"]}]}}`

func TestNewRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"not a URL":        {ServerAddress: "prom:9090"},
		"not http":         {ServerAddress: "ftp://prom:9090"},
		"resource and cpu": {ServerAddress: "http://prom", Queries: Queries{Resource: "r", CPU: "c"}},
		"bad label":        {ServerAddress: "http://prom", ReplicaLabel: "a-b", Queries: Queries{Activation: "a"}},
		"no replica query": {ServerAddress: "http://prom", Queries: Queries{TreeSaturation: "t"}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
}

func TestServerTimeoutIsAPrometheusDuration(t *testing.T) {
	for in, want := range map[time.Duration]string{
		2999999 * time.Microsecond: "2s",
		749999 * time.Microsecond:  "749ms",
		time.Minute:                "1m0s",
		0:                          "0s",
	} {
		got := serverTimeout(in).String()
		if got != want {
			t.Errorf("serverTimeout(%v) = %s, want %s", in, got, want)
		}
		if _, err := model.ParseDuration(got); err != nil {
			t.Errorf("%s: %v", got, err)
		}
	}
}

func TestClientOverHTTP(t *testing.T) {
	var gotTimeout string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		gotTimeout = r.Form.Get("timeout")
		switch r.Form.Get("query") {
		case "big":
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`+strings.Repeat(" ", 4096)+`]}}`)
		case "moved":
			http.Redirect(w, r, "http://169.254.169.254/latest", http.StatusFound)
		default:
			fmt.Fprint(w, oneReplica)
		}
	}))
	defer srv.Close()
	observe := func(o Options) error {
		o.ServerAddress = srv.URL
		src, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		_, err = src.Observe(context.Background())
		return err
	}

	if err := observe(Options{Queries: Queries{Activation: "act"}}); err != nil {
		t.Fatalf("plain query: %v", err)
	}
	// Sent in a form Prometheus' own duration parser reads (no fractions).
	if d, err := model.ParseDuration(gotTimeout); err != nil || d <= 0 || time.Duration(d) > DefaultQueryTimeout {
		t.Errorf("evaluation timeout sent = %q, want the remaining budget as a Prometheus duration, at most %v", gotTimeout, DefaultQueryTimeout)
	}
	err := observe(Options{Queries: Queries{Activation: "big"}, MaxResponseBytes: 1024})
	if err == nil || !strings.Contains(err.Error(), "larger than 1024 bytes") {
		t.Errorf("oversized response: err = %v", err)
	}
	err = observe(Options{Queries: Queries{Activation: "moved"}})
	if err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("redirect: err = %v", err)
	}
	refuse := errors.New("refused by the allow-list")
	err = observe(Options{Queries: Queries{Activation: "act"}, Control: func(string, string, syscall.RawConn) error { return refuse }})
	if !errors.Is(err, refuse) {
		t.Errorf("Control: err = %v, want the refusal", err)
	}
}

// TestQueryRangeKeepsTheBound: a range query goes through the source's
// client, under the same response bound and redirect policy.
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
	ask := func(query string) (model.Value, error) {
		return QueryRange(context.Background(), RangeQuery{ServerAddress: srv.URL, Query: query, MaxResponseBytes: 1024,
			Range: v1.Range{Start: time.Unix(1700000000, 0), End: time.Unix(1700000060, 0), Step: 15 * time.Second}})
	}
	if v, err := ask("load"); err != nil || v.(model.Matrix).Len() != 1 {
		t.Fatalf("range query: %v, %v", v, err)
	}
	if _, err := ask("big"); err == nil || !strings.Contains(err.Error(), "larger than 1024 bytes") {
		t.Errorf("oversized response: err = %v", err)
	}
	if _, err := ask("moved"); err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("redirect: err = %v", err)
	}
}
