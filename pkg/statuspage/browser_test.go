package statuspage_test

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/barometer-scaler/barometer/pkg/registry"
)

// screenshots writes the browser test's screenshots into docs/images/
// (go test ./pkg/statuspage -run Browser -screenshots); without it they go
// to the test's temporary directory.
var screenshots = flag.Bool("screenshots", false, "write the status page screenshots into docs/images/")

// chromium finds a Chromium or Chrome binary: $CHROMIUM, else the names
// Debian and others install it under.
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestStatusPageInBrowser opens both pages in headless Chromium and checks
// what a person sees: the targets' names, the chart drawn with its series
// named in its legend, a decision's reason, the configuration, and the
// hostile names and metadata shown as text, with no element injected and
// no script run.
func TestStatusPageInBrowser(t *testing.T) {
	exe := chromium()
	if exe == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium binary found, and CI=true: install it (.ci/install does: apt-get install chromium)")
		}
		t.Skip("no chromium binary found (apt-get install chromium, or set CHROMIUM); with CI=true this fails")
	}
	s := newScaler(t, time.Minute)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()

	dir := t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "..", "docs", "images")
	}
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	shoot := func(name string) {
		t.Helper()
		buf := run(t, ctx, chromedp.FullScreenshot(100))
		img, err := png.Decode(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 400 {
			t.Errorf("%s: a %dx%d screenshot", name, b.Dx(), b.Dy())
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The listing.
	do(chromedp.Navigate(s.url+"/status"), chromedp.WaitVisible(chromedp.CSS("#targets")))
	refresh := run(t, ctx, chromedp.AttributeValue(chromedp.CSS(`meta[http-equiv="refresh"]`), "content"))
	title := run(t, ctx, chromedp.Title())
	if refresh.Value != "60" || title != "Barometer status" {
		t.Errorf("refresh %q, title %q", refresh.Value, title)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#targets tr.target").length`)); n != len(s.reg.Targets()) {
		t.Errorf("%d target rows, want %d", n, len(s.reg.Targets()))
	}
	objects := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#targets a.object")].map(a => a.textContent)`))
	for _, want := range []registry.Ref{checkout, reporting, denied, evilOne, evilTwo} {
		if !contains(objects, want.String()) {
			t.Errorf("ScaledObject %q is not listed as text; listed: %q", want, objects)
		}
	}
	if n := run(t, ctx, chromedp.Evaluate[int](injectedJS)); n != 0 {
		t.Errorf("%d elements injected into the listing", n)
	}
	shoot("status-list.png")

	// A ScaledObject's page, reached by its link as a person would.
	do(chromedp.Click(chromedp.CSS(`a.object[href="/status/shop/checkout"]`)), chromedp.WaitVisible(chromedp.CSS("#chart svg")))
	legend := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#chart svg > text")].map(e => e.textContent)`))
	for _, name := range []string{"raw demand", "scaleValue", "replicas KEDA asks", "measured across", "saturation surge", "held by safety gate", "failed", "stale"} {
		if !contains(legend, name) {
			t.Errorf("the chart's legend lacks %q: %q", name, legend)
		}
	}
	lines := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#chart svg polyline").length`))
	bands := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#chart svg rect > title").length`))
	if lines != 4 || bands == 0 {
		t.Errorf("the chart draws %d series and %d marked bands, want 4 and some", lines, bands)
	}
	reasons := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#decisions td.reason")].map(e => e.textContent)`))
	served, err := s.reg.Serving(checkout)
	if err != nil {
		t.Fatal(err)
	}
	events := s.reg.Events(served)
	if len(reasons) == 0 || reasons[0] != events[len(events)-1].Reason {
		t.Errorf("the newest decision's reason: %q, want %q", reasons, events[len(events)-1].Reason)
	}
	settings := run(t, ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll("#settings tr.setting")].map(r => [r.cells[0].textContent, r.cells[1].textContent + " · " + r.cells[2].textContent]))`))
	if settings["connectionProfile"] != `"shop-replicas" · metadata` || settings["ewmaHalfLife"] != "0s · profile" || settings["targetPressure"] != "" {
		t.Errorf("configuration as shown: %v", settings)
	}
	shoot("status-object.png")

	// The hostile ScaledObjects: their names and metadata are text.
	for _, ref := range []registry.Ref{evilOne, evilTwo} {
		do(chromedp.Navigate(s.url+objectPath(ref)), chromedp.WaitVisible(chromedp.CSS("#settings")))
		if heading := run(t, ctx, chromedp.Text(chromedp.CSS("#object"))); heading != ref.String() {
			t.Errorf("the name is shown as %q, want the text %q", heading, ref.String())
		}
		metric := run(t, ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#settings tr.setting")].find(r => r.cells[0].textContent == "activationMetric").cells[1].textContent`))
		if want := strconv.Quote(hostileMeta); metric != want {
			t.Errorf("the hostile metadata value is shown as %q, want the text %q", metric, want)
		}
		injected := run(t, ctx, chromedp.Evaluate[int](injectedJS))
		title := run(t, ctx, chromedp.Title())
		if injected != 0 || strings.Contains(title, "pwned") || !strings.HasPrefix(title, ref.String()) {
			t.Errorf("%s: %d elements injected, title %q", ref, injected, title)
		}
	}
}

// injectedJS counts what a hostile value would have injected: an image, a
// script or an event handler attribute anywhere in the page.
const injectedJS = `document.querySelectorAll("img, script, [onerror], [onload]").length`

// run runs one browser action and returns its value.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
