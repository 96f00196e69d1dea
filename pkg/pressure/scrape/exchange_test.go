package scrape

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// counted is a loopback replica that counts the requests it is sent, by
// their Authorization header.
type counted struct {
	srv *httptest.Server
	mu  sync.Mutex
	by  map[string]int
}

func startCounted(t *testing.T, h http.Handler) *counted {
	t.Helper()
	c := &counted{by: map[string]int{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.by[r.Header.Get("Authorization")]++
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *counted) url() string { return c.srv.URL + "/metrics" }

func (c *counted) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.by {
		n += v
	}
	return n
}

func (c *counted) count(auth string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[auth]
}

type outcome struct {
	obs pressure.Observation
	err error
}

// observeAll samples every source at once, as the samplers of one aligned
// instant do.
func observeAll(srcs []*Source) []outcome {
	out := make([]outcome, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Go(func() { out[i].obs, out[i].err = s.Observe(context.Background()) })
	}
	wg.Wait()
	return out
}

// TestSameReplicaScrapedOncePerInterval: ten targets name one replica, five
// of them a second one too, sampled at the same aligned instants. Each
// interval, each replica is sent one request, every target reads the same
// values, and their CPU rates, each kept by its own target, agree.
func TestSameReplicaScrapedOncePerInterval(t *testing.T) {
	clk := newClock()
	cfg := demo.Config{Now: clk.Now}
	shared, second := demo.New(cfg), demo.New(cfg)
	shared.SetLoad(60)
	second.SetLoad(20)
	a, b := startCounted(t, shared.Handler()), startCounted(t, second.Handler())
	ex := NewExchange(ExchangeOptions{Now: clk.Now})
	var srcs []*Source
	for i := range 10 {
		urls := []string{a.url()}
		if i%2 == 0 {
			urls = append(urls, b.url())
		}
		srcs = append(srcs, newSource(t, Options{Targets: targets(t, urls...), Exchange: ex, Now: clk.Now}))
	}
	for interval := 1; interval <= 3; interval++ {
		var cpu []float64
		for i, o := range observeAll(srcs) {
			if o.err != nil {
				t.Fatalf("interval %d, target %d: %v", interval, i, o.err)
			}
			if want := 2 - i%2; len(o.obs.Replicas) != want {
				t.Fatalf("interval %d, target %d: %d replicas, want %d", interval, i, len(o.obs.Replicas), want)
			}
			k := slices.IndexFunc(o.obs.Replicas, func(r pressure.ReplicaObservation) bool { return r.Name == a.url() })
			if k < 0 {
				t.Fatalf("interval %d, target %d: %s not read", interval, i, a.url())
			}
			r := o.obs.Replicas[k]
			if r.WorkingSet != shared.State().WorkingSet {
				t.Errorf("interval %d, target %d: working set %v, want %v", interval, i, r.WorkingSet, shared.State().WorkingSet)
			}
			cpu = append(cpu, r.CPUUtilisation)
		}
		if a.total() != interval || b.total() != interval {
			t.Errorf("after %d intervals: %d and %d requests, want %d each", interval, a.total(), b.total(), interval)
		}
		for i, c := range cpu {
			if c != cpu[0] || interval > 1 && !near(c, 0.6) {
				t.Errorf("interval %d, target %d: CPU %v, target 0 %v, want 0.6 after the first", interval, i, c, cpu[0])
			}
		}
		clk.Advance(5 * time.Second)
	}
	// A target sampled twice at one instant (its previous sample is no
	// older than the scrape) scrapes anew rather than reuse its own.
	if _, err := srcs[1].Observe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := srcs[1].Observe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.total() != 5 {
		t.Errorf("two samples at one instant: %d requests in all, want 5", a.total())
	}
}

// TestSharingNeedsTheSameWay: targets of the same replica through
// different connection profiles (different credentials), without one, in
// different namespaces, or reading other metric names, each scrape it
// themselves; those that match share.
func TestSharingNeedsTheSameWay(t *testing.T) {
	w := demo.New(demo.Config{})
	w.SetLoad(30)
	rep := startCounted(t, w.Handler())
	dir := t.TempDir()
	for name, token := range map[string]string{"a": "token-a", "b": "token-b"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	set, err := connprofile.Parse([]byte(`
profiles:
  - {name: a, url_pattern: "http://127.0.0.1:*", namespaces: ["*"], authorization: {credentials_file: a}}
  - {name: b, url_pattern: "http://127.0.0.1:*", namespaces: ["*"], authorization: {credentials_file: b}}
`), dir, connprofile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	profile := func(name string) *connprofile.Profile {
		p, err := set.Resolve(name, rep.srv.URL, "shop")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ex := NewExchange(ExchangeOptions{})
	renamed := exposition.DefaultNames()
	renamed.Activations = "renamed_activations"
	var srcs []*Source
	for _, o := range []Options{
		{Profile: profile("a")}, {Profile: profile("a")},
		{Profile: profile("b")}, {Profile: profile("b")},
		{}, {},
		{Namespace: "shop"}, {Namespace: "shop"},
		{Namespace: "other"},
		{Names: renamed},
	} {
		o.Targets, o.Exchange = targets(t, rep.url()), ex
		srcs = append(srcs, newSource(t, o))
	}
	for i, o := range observeAll(srcs) {
		if o.err != nil {
			t.Errorf("target %d: %v", i, o.err)
		}
	}
	for auth, want := range map[string]int{"Bearer token-a": 1, "Bearer token-b": 1, "": 4} {
		if got := rep.count(auth); got != want {
			t.Errorf("%d requests with Authorization %q, want %d", got, auth, want)
		}
	}
}

// gate is a replica whose answers wait until the test opens it, telling
// the test when each request has arrived.
type gate struct {
	arrived chan struct{}
	open    chan struct{}
	status  int
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.arrived <- struct{}{}
	select {
	case <-g.open:
	case <-r.Context().Done():
		return
	}
	if g.status != http.StatusOK {
		http.Error(w, "down", g.status)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "%s 3\n", exposition.Activations)
}

// TestSharersKeepTheirOwnTimeouts: a target with a short scrape timeout
// joins a slow scrape another target started; it fails as it would alone,
// naming its own timeout, and the scrape goes on for the other, which reads
// the answer. One request in all. Then a replica answering 500 fails both
// sharers alike, again on one request.
func TestSharersKeepTheirOwnTimeouts(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusInternalServerError} {
		g := &gate{arrived: make(chan struct{}, 4), open: make(chan struct{}), status: status}
		rep := startCounted(t, g)
		ex := NewExchange(ExchangeOptions{})
		patient := newSource(t, Options{Targets: targets(t, rep.url()), Exchange: ex, Timeout: time.Minute})
		hasty := newSource(t, Options{Targets: targets(t, rep.url()), Exchange: ex, Timeout: 50 * time.Millisecond})

		done := make(chan outcome)
		go func() {
			obs, err := patient.Observe(context.Background())
			done <- outcome{obs, err}
		}()
		<-g.arrived
		_, err := hasty.Observe(context.Background())
		if err == nil || !strings.Contains(err.Error(), "timed out after 50ms") {
			t.Errorf("status %d: the hasty target: %v, want its own time-out", status, err)
		}
		close(g.open)
		p := <-done
		switch {
		case status == http.StatusOK && (p.err != nil || len(p.obs.Replicas) != 1 || p.obs.Replicas[0].WorkingSet != 3):
			t.Errorf("the patient target: %v %+v", p.err, p.obs.Replicas)
		case status != http.StatusOK && (p.err == nil || !strings.Contains(p.err.Error(), "HTTP status 500")):
			t.Errorf("the patient target: %v, want the replica's 500", p.err)
		}
		if rep.total() != 1 {
			t.Errorf("status %d: %d requests, want 1", status, rep.total())
		}
		// A third target sampled a moment later takes the finished
		// scrape, and fails or succeeds alike, without another request
		// (the hasty one would ask again: the scrape started before its
		// own sample).
		late := newSource(t, Options{Targets: targets(t, rep.url()), Exchange: ex})
		obs, err := late.Observe(context.Background())
		if status == http.StatusOK && (err != nil || obs.Replicas[0].WorkingSet != 3) || status != http.StatusOK && err == nil {
			t.Errorf("status %d: a later target from the finished scrape: %v", status, err)
		}
		if rep.total() != 1 {
			t.Errorf("status %d: %d requests after the second read, want 1", status, rep.total())
		}
	}
}

// TestJoinerOutlivesTheScrapeItJoined: the target with the short timeout
// runs the scrape, and a patient one joins it. The short one fails on its
// own timeout and its scrape ends with it; the patient one then scrapes
// the replica itself and reads the answer, as it would have alone.
func TestJoinerOutlivesTheScrapeItJoined(t *testing.T) {
	g := &gate{arrived: make(chan struct{}, 4), open: make(chan struct{}), status: http.StatusOK}
	rep := startCounted(t, g)
	ex := NewExchange(ExchangeOptions{})
	hasty := newSource(t, Options{Targets: targets(t, rep.url()), Exchange: ex, Timeout: 100 * time.Millisecond})
	patient := newSource(t, Options{Targets: targets(t, rep.url()), Exchange: ex, Timeout: time.Minute})

	hastyDone := make(chan error)
	go func() {
		_, err := hasty.Observe(context.Background())
		hastyDone <- err
	}()
	<-g.arrived
	patientDone := make(chan outcome)
	go func() {
		obs, err := patient.Observe(context.Background())
		patientDone <- outcome{obs, err}
	}()
	if err := <-hastyDone; err == nil || !strings.Contains(err.Error(), "timed out after 100ms") {
		t.Errorf("the hasty target: %v, want its own time-out", err)
	}
	<-g.arrived // the patient target asks itself
	close(g.open)
	if p := <-patientDone; p.err != nil || p.obs.Replicas[0].WorkingSet != 3 {
		t.Errorf("the patient target: %v", p.err)
	}
	if rep.total() != 2 {
		t.Errorf("%d requests, want 2", rep.total())
	}
}

// TestAbandonedScrapeIsCancelled: a scrape the target running it gave up
// on is cancelled (the replica sees the request end) and is not handed to
// the next sample, which asks again.
func TestAbandonedScrapeIsCancelled(t *testing.T) {
	g := &gate{arrived: make(chan struct{}, 4), open: make(chan struct{}), status: http.StatusOK}
	ended := make(chan struct{}, 4)
	rep := startCounted(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.ServeHTTP(w, r)
		ended <- struct{}{}
	}))
	ex := NewExchange(ExchangeOptions{})
	src := newSource(t, Options{Targets: targets(t, rep.url()), Exchange: ex, Timeout: 50 * time.Millisecond})
	if _, err := src.Observe(context.Background()); err == nil {
		t.Fatal("a replica that does not answer read")
	}
	<-g.arrived
	<-ended // cancelled, not left hanging
	close(g.open)
	obs, err := src.Observe(context.Background())
	if err != nil || obs.Replicas[0].WorkingSet != 3 {
		t.Fatalf("the next sample: %v", err)
	}
	if rep.total() != 2 {
		t.Errorf("%d requests, want 2", rep.total())
	}
}

// TestOwnScrapeNeverReused: on a clock that moves at every reading, a
// target sampled again within the share age scrapes anew, never taking
// its own previous scrape for another's; a second target sampled just
// after takes that new scrape.
func TestOwnScrapeNeverReused(t *testing.T) {
	clk := newClock()
	ticking := func() time.Time { clk.Advance(time.Millisecond); return clk.Now() }
	w := demo.New(demo.Config{Now: clk.Now})
	w.SetLoad(10)
	rep := startCounted(t, w.Handler())
	ex := NewExchange(ExchangeOptions{Now: ticking})
	a := newSource(t, Options{Targets: targets(t, rep.url()), Exchange: ex, Now: ticking})
	b := newSource(t, Options{Targets: targets(t, rep.url()), Exchange: ex, Now: ticking})
	for i := 1; i <= 3; i++ {
		if _, err := a.Observe(context.Background()); err != nil {
			t.Fatal(err)
		}
		if rep.total() != i {
			t.Fatalf("sample %d of one target: %d requests, want %d", i, rep.total(), i)
		}
	}
	if _, err := b.Observe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rep.total() != 3 {
		t.Errorf("a second target just after: %d requests, want 3", rep.total())
	}
}
