package statuspage_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/barometer-scaler/barometer/pkg/httpapi"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/registry"
	"github.com/barometer-scaler/barometer/pkg/registry/registrytest"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
	"github.com/barometer-scaler/barometer/pkg/statuspage"
	"github.com/barometer-scaler/barometer/pkg/trigger"
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
	ctx, dir := browser(t)
	s := newScaler(t, time.Minute)

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
	// Every text of the chart is inside it: none runs past its right edge.
	if overflowing := run(t, ctx, chromedp.Evaluate[[]string](overflowingJS)); len(overflowing) > 0 {
		t.Errorf("chart texts run past the chart's width: %q", overflowing)
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

// browser starts headless Chromium for the test (skipped without one,
// failed under CI=true) and returns its context and the directory the
// test's screenshots go to.
func browser(t *testing.T) (context.Context, string) {
	t.Helper()
	exe := chromium()
	if exe == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium binary found, and CI=true: install it (.ci/install does: apt-get install chromium)")
		}
		t.Skip("no chromium binary found (apt-get install chromium, or set CHROMIUM); with CI=true this fails")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	dir := t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "..", "docs", "images")
	}
	return ctx, dir
}

// overflowingJS lists the texts of the chart that run past its right edge.
const overflowingJS = `(() => { const svg = document.querySelector("#chart svg"), w = svg.viewBox.baseVal.width;
	return [...svg.querySelectorAll("text")].filter(e => { const b = e.getBBox(); return b.x + b.width > w + 0.5 }).map(e => e.textContent) })()`

// TestHourOfHistoryInBrowser samples a target every second for an hour
// and two minutes (a fake clock; the load a wave of 10-minute period) and
// opens its page in Chromium: the chart spans the hour, its time axis
// reaches -1h, and every text of it fits its width.
func TestHourOfHistoryInBrowser(t *testing.T) {
	ctx, dir := browser(t)
	clock := samplingtest.NewFakeClock(time.Now().Add(-2 * time.Hour).Truncate(time.Second))
	script := registrytest.Returning(wave(0))
	reg := registrytest.NewRegistry(t, registry.Config{
		Schema:          trigger.NewSchema(registrytest.Kind("script", "", func(string) *registrytest.Script { return script })),
		DefaultInterval: time.Second, IdleTimeout: 3 * time.Hour, History: sampling.DefaultHistory, Clock: clock,
	})
	ref := registry.Ref{Namespace: "shop", Name: "hourly"}
	tg, _, err := reg.Resolve(ref, map[string]string{"source": "script", "script": "hourly"})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.WaitSamples(t, tg, 1)
	const samples = 3600 + 120
	for n := uint64(2); n <= samples; n++ {
		script.Set(wave(int(n)))
		clock.Tick(t, time.Second)
		registrytest.WaitSamples(t, tg, n)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Registry: reg,
		Status: statuspage.New(statuspage.Config{Registry: reg, Refresh: time.Minute})}))
	defer srv.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+objectPath(ref)), chromedp.WaitVisible(chromedp.CSS("#chart svg"))); err != nil {
		t.Fatal(err)
	}
	if overflowing := run(t, ctx, chromedp.Evaluate[[]string](overflowingJS)); len(overflowing) > 0 {
		t.Errorf("chart texts run past the chart's width: %q", overflowing)
	}
	texts := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#chart svg text")].map(e => e.textContent)`))
	if !contains(texts, "-1h") || !strings.HasPrefix(texts[0], "The last 1h") {
		t.Errorf("the chart does not span the hour: %q", texts)
	}
	buf := run(t, ctx, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, "status-hour.png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// wave is the n-th second of a load of three replicas whose CPU rises and
// falls over ten minutes, with a one-minute burst every twenty.
func wave(n int) pressure.Observation {
	cpu := 0.45 + 0.3*math.Sin(2*math.Pi*float64(n)/600)
	if n%1200 < 60 {
		cpu = 1
	}
	obs := pressure.Observation{}
	for i := range 3 {
		obs.Replicas = append(obs.Replicas, pressure.ReplicaObservation{Name: fmt.Sprintf("hourly-%d", i), CPUUtilisation: cpu})
	}
	return obs
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
