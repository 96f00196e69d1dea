package promsource

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/promsource/promclient"
)

func TestFailOnEmpty(t *testing.T) {
	q := Queries{Activation: "act", CPU: "cpu", WalState: "wal"}
	answers := map[string]any{"act": vec("pod=a", 1.0)}
	// The default (ignoreNullValues: true): an empty cpu reads 0.
	src, _ := testSource(q, answers)
	if _, err := src.Observe(context.Background()); err != nil {
		t.Fatalf("default: %v", err)
	}
	src.failOnEmpty = true
	_, err := src.Observe(context.Background())
	if !errors.Is(err, ErrEmpty) || !strings.Contains(err.Error(), "cpuQuery") {
		t.Errorf("FailOnEmpty with an empty cpu query: err = %v, want ErrEmpty naming cpuQuery", err)
	}
	// An empty WAL answer means every replica is Healthy, whatever the
	// setting: only the dimensions pressure is read from are required.
	answers["cpu"] = vec("pod=a", 0.5)
	if _, err := src.Observe(context.Background()); err != nil {
		t.Errorf("FailOnEmpty with only the wal query empty: %v", err)
	}
}

func TestQueryTimeoutAndProfileCeiling(t *testing.T) {
	if got := queryTimeout(Options{}); got != promclient.DefaultQueryTimeout {
		t.Errorf("no setting: %v", got)
	}
	if got := queryTimeout(Options{QueryTimeout: time.Second}); got != time.Second {
		t.Errorf("trigger: %v", got)
	}
	set, err := connprofile.Parse([]byte(`profiles: [{name: p, url: "http://prom:9090", namespaces: ["*"], timeout: 2s}]`), "", connprofile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := set.Resolve("p", "", "ns")
	for trigger, want := range map[time.Duration]time.Duration{
		0:           2 * time.Second, // the profile's, not the default
		time.Second: time.Second,     // shorter: the trigger's
		time.Minute: 2 * time.Second, // longer: the profile's ceiling
	} {
		if got := queryTimeout(Options{QueryTimeout: trigger, Profile: p}); got != want {
			t.Errorf("trigger %v with a 2s profile: %v, want %v", trigger, got, want)
		}
	}
}

func TestDataTime(t *testing.T) {
	at := time.Unix(1700000100, 0).UTC()
	smp := func(v float64) *model.Sample { return &model.Sample{Value: model.SampleValue(v)} }
	for name, tc := range map[string]struct {
		vec  model.Vector
		want time.Time
	}{
		"none":           {nil, time.Time{}},
		"newest wins":    {model.Vector{smp(1700000000), smp(1700000090.5), smp(1700000050)}, time.Unix(1700000090, 5e8).UTC()},
		"not a number":   {model.Vector{smp(math.NaN()), smp(math.Inf(1))}, time.Time{}},
		"a future clock": {model.Vector{smp(1700000200)}, at},
	} {
		if got := DataTime(tc.vec, at); !got.Equal(tc.want) {
			t.Errorf("%s: DataTime = %v, want %v", name, got, tc.want)
		}
	}
}
