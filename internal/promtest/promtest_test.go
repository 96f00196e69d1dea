package promtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
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
