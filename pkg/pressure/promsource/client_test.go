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

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promclient"
)

const oneReplica = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1700000000,"3"]}]}}`

func TestNewRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"not a URL":        {ServerAddress: "prom:9090"},
		"not http":         {ServerAddress: "ftp://prom:9090"},
		"resource and cpu": {ServerAddress: "http://prom", Queries: Queries{Resource: "r", CPU: "c"}},
		"bad label":        {ServerAddress: "http://prom", ReplicaLabel: "a-b", Queries: Queries{Activation: "a"}},
		"no replica query": {ServerAddress: "http://prom", Queries: Queries{TreeSaturation: "t"}},
		"api parameter":    {ServerAddress: "http://prom", Queries: Queries{Activation: "a"}, QueryParameters: map[string]string{"time": "0"}},
		"cookie header":    {ServerAddress: "http://prom", Queries: Queries{Activation: "a"}, CustomHeaders: map[string]string{"Cookie": "a=b"}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
}

// TestClientOverHTTP: the source asks through the client its options
// describe (promclient), within the sample's budget.
func TestClientOverHTTP(t *testing.T) {
	var gotTimeout, gotExtras string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		gotTimeout = r.Form.Get("timeout")
		gotExtras = "dedup=" + r.URL.Query().Get("dedup") + " x-client=" + r.Header.Get("X-Client-Id")
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
	if d, err := model.ParseDuration(gotTimeout); err != nil || d <= 0 || time.Duration(d) > promclient.DefaultQueryTimeout {
		t.Errorf("evaluation timeout sent = %q, want the remaining budget as a Prometheus duration, at most %v", gotTimeout, promclient.DefaultQueryTimeout)
	}
	if gotExtras != "dedup= x-client=" {
		t.Errorf("without query parameters or custom headers the server saw %q", gotExtras)
	}
	err := observe(Options{Queries: Queries{Activation: "act"},
		QueryParameters: map[string]string{"dedup": "true"}, CustomHeaders: map[string]string{"x-client-id": "shop"}})
	if err != nil || gotExtras != "dedup=true x-client=shop" {
		t.Errorf("query parameters and custom headers: server saw %q, err = %v", gotExtras, err)
	}
	err = observe(Options{Queries: Queries{Activation: "big"}, MaxResponseBytes: 1024})
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
