package promclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
)

// TestProfileRedirect: a server reached through a profile answers with a
// redirect to a host of another namespace (a loopback server by another
// name, which the allow-list admits): the query fails naming the profile,
// and nothing, not even the tenant, reaches the other host.
func TestProfileRedirect(t *testing.T) {
	const token = "tok-one-6a0f3b9e"
	var reached sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		reached.Store(r.URL.Path, r.Header.Get("X-Scope-OrgID"))
	}))
	t.Cleanup(other.Close)
	elsewhere := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := allow.Parse("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	set, err := connprofile.Parse([]byte(`
profiles:
  - name: team-a
    url: `+srv.URL+`
    namespaces: [team-a]
    tenant: team-a
    bearer_token_file: token
  - name: team-a-follows
    url: `+srv.URL+`
    namespaces: [team-a]
    tenant: team-a
    follow_redirects: true
    bearer_token_file: token
`), dir, connprofile.Options{Control: list.Control})
	if err != nil {
		t.Fatal(err)
	}
	for profile, want := range map[string]string{
		"team-a":         `connection profile "team-a" does not follow redirects`,
		"team-a-follows": `not a server connection profile "team-a-follows" may be used with`,
	} {
		p, err := set.Resolve(profile, "", "team-a")
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{ServerAddress: p.URL(), Profile: p})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _, _, err = c.API.Query(ctx, "barometer_activations", time.Now())
		cancel()
		switch {
		case err == nil:
			t.Errorf("%s: the redirected query succeeded", profile)
		case !strings.Contains(err.Error(), want):
			t.Errorf("%s: error %q does not say %q", profile, err, want)
		case strings.Contains(err.Error(), token):
			t.Errorf("%s: error %q carries the token", profile, err)
		}
	}
	reached.Range(func(path, tenant any) bool {
		t.Errorf("the other host was asked for %v with tenant %q", path, tenant)
		return true
	})
}
