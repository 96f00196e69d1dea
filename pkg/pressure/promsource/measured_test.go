package promsource

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// TestMeasuredAtIsTheNewestSample: the observation's data is as new as the
// newest sample timestamp in the results, which the signal's lag counts
// from.
func TestMeasuredAtIsTheNewestSample(t *testing.T) {
	cpu := vec("pod=a", 0.5, "pod=b", 0.25)
	cpu[0].Timestamp = model.TimeFromUnixNano(testNow.Add(-30 * time.Second).UnixNano())
	cpu[1].Timestamp = model.TimeFromUnixNano(testNow.Add(-20 * time.Second).UnixNano())
	src, _ := testSource(Queries{CPU: "cpu"}, map[string]any{"cpu": cpu})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := testNow.Add(-20 * time.Second); !obs.MeasuredAt.Equal(want) {
		t.Errorf("MeasuredAt = %v, want %v", obs.MeasuredAt, want)
	}
}
