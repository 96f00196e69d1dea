package statuspage_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/registry"
)

func objectPath(ref registry.Ref) string {
	return "/status/" + url.PathEscape(ref.Namespace) + "/" + url.PathEscape(ref.Name)
}

// TestStatusPage reads the pages of one scaler: its samples take a few
// seconds (the host source's CPU readings span 100 ms each).
func TestStatusPage(t *testing.T) {
	s := newScaler(t, time.Minute)
	t.Run("ShowsWhatHappened", func(t *testing.T) { showsWhatHappened(t, s) })
	t.Run("NothingSecretAppears", func(t *testing.T) { nothingSecretAppears(t, s) })
	t.Run("HostileNamesAreEscaped", func(t *testing.T) { hostileNamesAreEscaped(t, s) })
	t.Run("UnknownObjectAndMethods", func(t *testing.T) { unknownObjectAndMethods(t, s) })
}

// showsWhatHappened: the listing names every target with its
// source, policy, profile, interval, ScaledObjects, last value and state;
// a ScaledObject's page draws its history with every series and mark in
// the legend, lists its decisions with their reasons and its effective
// configuration with each value's origin.
func showsWhatHappened(t *testing.T, s *scaler) {
	code, list := s.get(t, "/status")
	if code != http.StatusOK {
		t.Fatalf("/status: %d\n%s", code, list)
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="60">`,
		"/checkout-0", `href="/status/shop/checkout"`, ">shop/checkout<", ">batch/reporting<",
		"scrape", "host", "responsive", "original", "5s", "the default target (/scale)",
		"401",                              // the denied replica's error
		"failing: no sample has succeeded", // denied's, every sample refused
		`href="/status/default"`,
	} {
		if !strings.Contains(list, want) {
			t.Errorf("/status lacks %q", want)
		}
	}
	if code, def := s.get(t, "/status/default"); code != http.StatusOK || !strings.Contains(def, "the default target (/scale)") || !strings.Contains(def, "<svg") {
		t.Errorf("/status/default: %d\n%s", code, def)
	}
	code, page := s.get(t, objectPath(checkout))
	if code != http.StatusOK {
		t.Fatalf("checkout: %d\n%s", code, page)
	}
	if strings.Contains(page, `<td class="key">targetPressure</td>`) {
		t.Error("checkout's page lists targetPressure, which is at its default")
	}
	for _, want := range []string{
		"<svg", ">raw demand<", ">scaleValue<", ">replicas KEDA asks<", ">measured across<",
		">saturation surge<", ">held by safety gate<", ">failed<", ">stale<", "<title>saturation surge</title>", "<title>stale</title>",
		"The last 3m55s, one sample every 5s", "at target 0.7", ">-1m<", ">now<",
		`<td class="key">connectionProfile</td><td class="value"><code>&#34;shop-replicas&#34;</code></td><td class="origin-metadata">metadata</td>`,
		`<td class="key">ewmaHalfLife</td><td class="value"><code>0s</code></td><td class="origin-profile">profile</td>`,
		"more keys are at their defaults",
		"saturation surge", "no answer from", `href="/events/shop/checkout"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("checkout's page lacks %q", want)
		}
	}
	if strings.Contains(page, ">forecast</text>") {
		t.Error("a forecast series is drawn while no sample has one")
	}
	served, err := s.reg.Serving(checkout)
	if err != nil {
		t.Fatal(err)
	}
	events := s.reg.Events(served)
	last := events[len(events)-1]
	if !strings.Contains(page, html.EscapeString(last.Reason)) {
		t.Errorf("the last decision's reason %q is not listed", last.Reason)
	}
	_, reporting := s.get(t, objectPath(reporting))
	if !strings.Contains(reporting, "at target 0.5") || !strings.Contains(reporting, `<td class="key">ewmaHalfLife</td><td class="value"><code>2m0s</code></td><td class="origin-metadata">metadata</td>`) {
		t.Errorf("reporting's page does not read its own trigger:\n%s", reporting)
	}
}

// nothingSecretAppears: a connection profile's header value, its
// token file's content and its tenant reach the replicas (they answer
// only with them) but never a page, not even the error of a replica that
// refused them.
func nothingSecretAppears(t *testing.T, s *scaler) {
	if snap := s.targets[1].Load(); snap.LastErr == nil && snap.Samples-snap.Failures < 30 {
		t.Fatalf("checkout was not sampled through its profile: %+v", snap)
	}
	for _, path := range []string{"/status", objectPath(checkout), objectPath(denied), objectPath(evilOne), "/status/nowhere/none"} {
		_, body := s.get(t, path)
		for _, secret := range []string{headerSecret, tokenSecret, tenantSecret, "bearer_token_file", "http_headers"} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows %q", path, secret)
			}
		}
	}
	_, page := s.get(t, objectPath(denied))
	if !strings.Contains(page, "401") {
		t.Errorf("the denied replica's error is not shown:\n%s", page)
	}
}

// hostileNamesAreEscaped: a ScaledObject's name and a metadata value
// reach the HTML as text, never as markup, and the name's link leads to
// its page.
func hostileNamesAreEscaped(t *testing.T, s *scaler) {
	for _, path := range []string{"/status", objectPath(evilOne), objectPath(evilTwo)} {
		code, body := s.get(t, path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", path, code, body)
		}
		for _, raw := range []string{hostileScript, hostileImg, hostileMeta, "<img"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s holds %q unescaped", path, raw)
			}
		}
	}
	_, page := s.get(t, objectPath(evilOne))
	if !strings.Contains(page, html.EscapeString("evil/"+hostileScript)) {
		t.Errorf("the hostile name is not shown as text")
	}
}

// unknownObjectAndMethods: an unknown ScaledObject is a 404 page; the
// page is read-only.
func unknownObjectAndMethods(t *testing.T, s *scaler) {
	if code, body := s.get(t, "/status/nowhere/none"); code != http.StatusNotFound || !strings.Contains(body, "nowhere/none") {
		t.Errorf("unknown: %d\n%s", code, body)
	}
	resp, err := http.Post(s.url+"/status", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /status: %d", resp.StatusCode)
	}
}
