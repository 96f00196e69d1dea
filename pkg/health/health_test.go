package health

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexliesenfeld/health"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/sampling"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func sig(act, res, wal float64, state pressure.WalSaturationState, storageOver bool) *signal.ScalingSignal {
	return &signal.ScalingSignal{
		ScaleValue: 1.5, RecommendedReplicas: 2, Reason: "r", SampledAt: t0,
		Compute: pressure.ComputePressure{Activation: act, Resource: res, WalDispatch: wal, WalSaturation: state, ReplicaCount: 2},
		Storage: pressure.StoragePressure{OverThreshold: storageOver, WalRetainedBytes: 42},
	}
}

func TestEvaluate(t *testing.T) {
	noTiers := DefaultOptions()
	noTiers.ComputeTiers = false
	tests := []struct {
		name   string
		sig    *signal.ScalingSignal
		opts   Options
		want   Status
		causes int
	}{
		{"idle", sig(0.1, 0.2, 0, pressure.Healthy, false), DefaultOptions(), Healthy, 0},
		{"just under degraded", sig(0.8499, 0, 0, pressure.Healthy, false), DefaultOptions(), Healthy, 0},
		{"degraded tier at bound", sig(0, 0.85, 0, pressure.Healthy, false), DefaultOptions(), Degraded, 1},
		{"unhealthy tier at bound", sig(0.95, 0, 0, pressure.Healthy, false), DefaultOptions(), Unhealthy, 1},
		{"NaN reads zero", sig(0, 0, 0, pressure.Healthy, false), DefaultOptions(), Healthy, 0},
		{"tiers off", sig(1, 1, 0, pressure.Healthy, false), noTiers, Healthy, 0},
		{"WAL throttled is degraded", sig(0, 0, 0.5, pressure.Throttled, false), DefaultOptions(), Degraded, 1},
		{"WAL saturated is unhealthy", sig(0, 0, 1, pressure.Saturated, false), noTiers, Unhealthy, 1},
		{"storage is at most degraded", sig(0, 0, 0, pressure.Healthy, true), DefaultOptions(), Degraded, 1},
		{"worst wins", sig(0.9, 0, 1, pressure.Saturated, true), DefaultOptions(), Unhealthy, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Evaluate(tt.sig, t0.Add(time.Second), tt.opts)
			if v.Status != tt.want || len(v.Causes) != tt.causes {
				t.Fatalf("got %v %q, want %v with %d cause(s)", v.Status, v.Causes, tt.want, tt.causes)
			}
			d := v.Data
			if d.Worst != max(d.Activation, d.Resource, d.WalDispatch) || d.StorageWalRetainedBytes != 42 ||
				d.CheckedAt != t0.Add(time.Second) || d.SampledAt != t0 || d.RecommendedReplicas != 2 {
				t.Fatalf("inputs not reported as data: %+v", d)
			}
		})
	}
}

func TestFresh(t *testing.T) {
	warm := &sampling.Snapshot{Signal: signal.ScalingSignal{Reason: signal.ReasonWarmingUp}, Interval: 5 * time.Second}
	if err := Fresh(warm, t0); !errors.Is(err, ErrWarmingUp) {
		t.Fatalf("warming up: %v", err)
	}
	snap := &sampling.Snapshot{Signal: *sig(0.1, 0, 0, pressure.Healthy, false), Interval: 5 * time.Second}
	if err := Fresh(snap, t0.Add(15*time.Second)); err != nil {
		t.Fatalf("fresh at 3 intervals: %v", err)
	}
	snap.LastErr = errors.New("connection refused")
	err := Fresh(snap, t0.Add(16*time.Second))
	if err == nil || !strings.Contains(err.Error(), "stale") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("stale: %v", err)
	}
}

func TestChecksWithChecker(t *testing.T) {
	// The checker runs checks on its own goroutines, so the test hands them
	// the snapshot and the time through atomics.
	var snap atomic.Pointer[sampling.Snapshot]
	var now atomic.Int64
	now.Store(t0.Add(time.Second).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	snap.Store(&sampling.Snapshot{Signal: *sig(0.1, 0, 1, pressure.Saturated, false), Interval: 5 * time.Second})
	checker := health.NewChecker(
		health.WithDisabledCache(),
		health.WithDisabledAutostart(),
		health.WithCheck(FreshnessCheck("signal-fresh", snap.Load, clock)),
		health.WithCheck(PressureCheck("pressure", snap.Load, clock, DefaultOptions())),
	)
	res := checker.Check(context.Background())
	if res.Status != health.StatusDown || res.Details["signal-fresh"].Status != health.StatusUp || res.Details["pressure"].Status != health.StatusDown {
		t.Fatalf("saturated WAL: %+v", res)
	}
	snap.Store(&sampling.Snapshot{Signal: *sig(0.9, 0, 0, pressure.Healthy, false), Interval: 5 * time.Second})
	if res := checker.Check(context.Background()); res.Status != health.StatusUp {
		t.Fatalf("degraded must stay up: %+v", res)
	}
	now.Add(int64(time.Minute))
	if res := checker.Check(context.Background()); res.Details["signal-fresh"].Status != health.StatusDown {
		t.Fatalf("stale must be down: %+v", res)
	}
}
