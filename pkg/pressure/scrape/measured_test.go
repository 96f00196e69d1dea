package scrape

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/barometer-scaler/barometer/examples/demo-workload/demo"
)

// TestMeasuredAtIsWhenTheReplicasAnswered: a scrape's data is as old as
// the scrape that read it, which the signal's lag counts from.
func TestMeasuredAtIsWhenTheReplicasAnswered(t *testing.T) {
	clk := newClock()
	w := demo.New(demo.Config{Now: clk.Now})
	srv := startOn(t, "127.0.0.1:0", only(w, expfmt.TypeTextPlain))
	src := newSource(t, Options{Targets: targets(t, srv.URL+"/metrics"), Now: clk.Now})
	want := clk.Now()
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !obs.MeasuredAt.Equal(want) {
		t.Errorf("MeasuredAt = %v, want %v", obs.MeasuredAt, want)
	}
	clk.Advance(5 * time.Second)
	if obs, _ = src.Observe(context.Background()); !obs.MeasuredAt.Equal(want.Add(5 * time.Second)) {
		t.Errorf("second sample MeasuredAt = %v", obs.MeasuredAt)
	}
}
