package promsource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/querypool"
)

func TestOneQueryPerSample(t *testing.T) {
	src, api := testSource(contract, map[string]any{
		"act": vec("pod=a", 1.0), "cpu": vec("pod=a", 0.5), "splits": vec("pod=a", 2.0),
	})
	for range 2 {
		obs, err := src.Observe(context.Background())
		if err != nil || len(obs.Replicas) != 1 || obs.Replicas[0].SplitsInFlight != 2 || obs.Replicas[0].CPUUtilisation != 0.5 {
			t.Fatalf("obs %+v, err %v", obs, err)
		}
	}
	if len(api.asked) != 2 {
		t.Errorf("%d queries for 2 samples of 6 dimensions, want 2: %q", len(api.asked), api.asked)
	}
}

func TestAFailingPartIsAskedAloneFromThenOn(t *testing.T) {
	src, api := testSource(contract, map[string]any{
		"act": vec("pod=a", 1.0),
		"cpu": errors.New("bad_data: parse error"),
	})
	for sample := range 2 {
		api.asked = nil
		_, err := src.Observe(context.Background())
		if err == nil || !strings.Contains(err.Error(), `cpuQuery "cpu"`) {
			t.Fatalf("sample %d: err = %v, want cpuQuery's own error", sample, err)
		}
		// The first sample asks the combined query, then each part; the
		// next asks cpu alone and the rest combined.
		want := map[int]int{0: 1 + len(dimsOf(contract)), 1: 2}[sample]
		if len(api.asked) != want {
			t.Errorf("sample %d: %d queries, want %d: %q", sample, len(api.asked), want, api.asked)
		}
	}
}

func TestACombinationRefusedAgainAndAgainIsGivenUp(t *testing.T) {
	src, api := testSource(contract, map[string]any{"act": vec("pod=a", 1.0)})
	var dims []dimension
	for d, q := range src.queries {
		if q != "" {
			dims = append(dims, dimension(d))
		}
	}
	api.answers[src.combinedQuery(dims)] = errors.New("response body larger than 16777216 bytes")
	for sample := range maxRefusals + 1 {
		api.asked = nil
		if _, err := src.Observe(context.Background()); err != nil {
			t.Fatalf("sample %d: %v", sample, err)
		}
		// Combined, then each part, until the combination is given up.
		want := 1 + len(dims)
		if sample == maxRefusals {
			want = len(dims)
		}
		if len(api.asked) != want {
			t.Errorf("sample %d: %d queries, want %d", sample, len(api.asked), want)
		}
	}
}

func TestAFailureNotTheQueriesIsNotAskedAgain(t *testing.T) {
	for name, failure := range map[string]error{
		"busy proxy":        &v1.Error{Type: v1.ErrServer, Msg: "server error: 503"},
		"timed out queued":  &v1.Error{Type: v1.ErrTimeout, Msg: "query timed out in query queue"},
		"no time to answer": fmt.Errorf("%w: 300ms left before the deadline, and the server's recent answers took up to 450ms", querypool.ErrNoTime),
	} {
		t.Run(name, func(t *testing.T) {
			src, api := testSource(contract, map[string]any{"act": failure})
			_, err := src.Observe(context.Background())
			if !errors.Is(err, failure) || !strings.Contains(err.Error(), "asked as one") {
				t.Errorf("err = %v, want the server's answer to the combined query", err)
			}
			if len(api.asked) != 1 || src.solo.Load() != 0 {
				t.Errorf("asked %q, solo %b: want the one combined query and nothing learnt", api.asked, src.solo.Load())
			}
		})
	}
}

func dimsOf(q Queries) []string {
	var out []string
	for _, x := range q.byDimension() {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// gatedAPI is fakeAPI whose answers wait until open is closed, and which
// counts the queries it is evaluating at once.
type gatedAPI struct {
	fakeAPI
	open              chan struct{}
	mu                sync.Mutex
	inFlight, maxSeen int
}

func (g *gatedAPI) Query(ctx context.Context, q string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	g.mu.Lock()
	g.inFlight++
	g.maxSeen = max(g.maxSeen, g.inFlight)
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.inFlight--; g.mu.Unlock() }()
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, nil, nil, ctx.Err()
	}
	return g.fakeAPI.Query(ctx, q, ts, opts...)
}

func TestIdenticalQueriesShareOneAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &gatedAPI{fakeAPI: fakeAPI{answers: map[string]any{"act": vec("pod=a", 1.0), "cpu": vec("pod=a", 0.5)}}, open: make(chan struct{})}
		pool := querypool.New(0)
		reg := prometheus.NewRegistry()
		reg.MustRegister(pool)
		const targets = 50
		errs := make(chan error, targets)
		for range targets {
			src := newSource(api, Options{ServerAddress: "http://prom:9090", Queries: contract, Pool: pool, Now: func() time.Time { return testNow }})
			go func() {
				obs, err := src.Observe(context.Background())
				if err == nil && (len(obs.Replicas) != 1 || obs.Replicas[0].CPUUtilisation != 0.5) {
					err = fmt.Errorf("obs %+v", obs)
				}
				errs <- err
			}()
		}
		synctest.Wait() // every target asking
		close(api.open)
		for range targets {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if len(api.asked) != 1 {
			t.Errorf("%d targets asking the same sent %d queries, want 1", targets, len(api.asked))
		}
		if n := metric(t, reg, "barometer_prometheus_queries_shared_total").GetCounter().GetValue(); n != targets-1 {
			t.Errorf("shared = %v, want %d", n, targets-1)
		}
	})
}

func TestQueriesPastTheBoundWaitTheirTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &gatedAPI{fakeAPI: fakeAPI{answers: map[string]any{}}, open: make(chan struct{})}
		pool := querypool.New(3)
		reg := prometheus.NewRegistry()
		reg.MustRegister(pool)
		const targets = 10
		errs := make(chan error, targets)
		for i := range targets {
			act := fmt.Sprintf("act%d", i)
			api.answers[act] = vec("pod=a", 1.0)
			src := newSource(api, Options{ServerAddress: "http://prom:9090", Queries: Queries{Activation: act}, Pool: pool, Now: func() time.Time { return testNow }})
			go func() {
				_, err := src.Observe(context.Background())
				errs <- err
			}()
		}
		synctest.Wait()
		time.Sleep(time.Second) // the queued ones wait a second
		synctest.Wait()
		close(api.open)
		for range targets {
			if err := <-errs; err != nil {
				t.Errorf("a query past the bound failed instead of waiting: %v", err)
			}
		}
		if api.maxSeen != 3 || len(api.asked) != targets {
			t.Errorf("%d in flight at most, %d asked; want 3 and %d", api.maxSeen, len(api.asked), targets)
		}
		h := metric(t, reg, "barometer_prometheus_query_wait_seconds").GetHistogram()
		if h.GetSampleCount() != targets || h.GetSampleSum() < (targets-3)*1.0 {
			t.Errorf("wait: %d observed summing %vs; want %d, at least %d seconds", h.GetSampleCount(), h.GetSampleSum(), targets, targets-3)
		}
	})
}

// metric is the one metric of the family name reg gathers.
func metric(t *testing.T, reg *prometheus.Registry, name string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0]
		}
	}
	t.Fatalf("no single metric %s gathered", name)
	return nil
}
