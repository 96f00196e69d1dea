package promtest

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/tlsreload/tlstest"
)

func TestScrapesItsTargets(t *testing.T) {
	start := time.Now()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE probe gauge\nprobe 42")
	}))
	defer target.Close()
	srv := Start(t, []Target{{URL: target.URL + "/metrics", Labels: map[string]string{"pod": "p0"}}}, Options{})
	t.Logf("ready after %v", time.Since(start))
	vec := srv.WaitSeries(t, `probe{job="test",pod="p0"}`, 1, 20*time.Second)
	if vec[0].Value != 42 {
		t.Errorf("probe = %v, want 42", vec[0].Value)
	}
	t.Logf("first scrape visible after %v", time.Since(start))
}

func TestSecuredServer(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE probe gauge\nprobe 7")
	}))
	defer target.Close()
	ca := tlstest.NewCA(t)
	srv := Start(t, []Target{{URL: target.URL + "/metrics"}}, Options{Web: &Web{CA: ca, Users: map[string]string{"u": "p1"}}})
	if !strings.HasPrefix(srv.URL, "https://") {
		t.Fatalf("URL = %s, want https", srv.URL)
	}
	srv.WaitSeries(t, "probe", 1, 20*time.Second)

	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	status := func(user, password string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/query?query=probe", nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := tlsClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("", ""); got != http.StatusUnauthorized {
		t.Errorf("no credentials: %d", got)
	}
	if got := status("u", "p1"); got != http.StatusOK {
		t.Errorf("right credentials: %d", got)
	}
	srv.SetUsers(t, map[string]string{"u": "p2"})
	if got := status("u", "p1"); got != http.StatusUnauthorized {
		t.Errorf("old password after SetUsers: %d", got)
	}
	if got := status("u", "p2"); got != http.StatusOK {
		t.Errorf("new password after SetUsers: %d", got)
	}
}
