package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/sampling/samplingtest"
)

// One caller varying a sampled key cannot start samplers without bound:
// past each limit a new target is a *LimitError naming the setting.
func TestLimitsRefuseNewTargets(t *testing.T) {
	clock := samplingtest.NewFakeClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := NewRegistry(ctx, Config{Schema: testSources(), IdleTimeout: time.Minute, Clock: clock,
		Limits: Limits{Targets: 3, TargetsPerNamespace: 2, RefsPerTarget: 2}})
	resolve := func(ns, name, id string) error {
		_, _, err := reg.Resolve(Ref{Namespace: ns, Name: name}, map[string]string{"source": "const", "name": id})
		return err
	}
	var le *LimitError
	for i := range 2 {
		if err := resolve("a", "so", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := resolve("a", "so", "2"); !errors.As(err, &le) || le.Limit != LimitTargetsPerNamespace ||
		!strings.Contains(err.Error(), "BAROMETER_MAX_TARGETS_PER_NAMESPACE") || !strings.Contains(err.Error(), "namespace a") {
		t.Fatalf("third target of namespace a: %v", err)
	}
	if err := resolve("b", "so", "2"); err != nil {
		t.Fatal(err)
	}
	if err := resolve("c", "so", "3"); !errors.As(err, &le) || le.Limit != LimitTargets || !strings.Contains(err.Error(), "raise BAROMETER_MAX_TARGETS to") {
		t.Fatalf("fourth target: %v", err)
	}
	// A target already running serves a new ScaledObject, up to its limit.
	if err := resolve("c", "other", "0"); err != nil {
		t.Fatal(err)
	}
	if err := resolve("c", "third", "0"); !errors.As(err, &le) || le.Limit != LimitRefsPerTarget {
		t.Fatalf("third ScaledObject of one target: %v", err)
	}
	if got := reg.Refusals(); got[LimitTargets] != 1 || got[LimitTargetsPerNamespace] != 1 || got[LimitRefsPerTarget] != 1 {
		t.Errorf("refusals %v", got)
	}
	// Once idle, targets and the ScaledObjects that used them are released,
	// and their cache entries with them.
	clock.Advance(2 * time.Minute)
	if n := reg.ReapIdle(); n != 3 {
		t.Fatalf("reaped %d", n)
	}
	if err := resolve("a", "so", "2"); err != nil {
		t.Fatalf("after the reap: %v", err)
	}
	if n := reg.cache.n; n != 1 {
		t.Errorf("cache holds %d entries, want the 1 made since", n)
	}
}

// The default target is never stopped, but the ScaledObjects that used it
// are forgotten once idle: their names are not kept for ever.
func TestDefaultTargetReleasesIdleNames(t *testing.T) {
	clock := samplingtest.NewFakeClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := NewRegistry(ctx, Config{Schema: testSources(), IdleTimeout: time.Minute, Clock: clock})
	md, err := reg.Parse(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	def, err := reg.SetDefault(md)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, _, err := reg.Resolve(Ref{Namespace: "shop", Name: fmt.Sprintf("so-%d", i)}, map[string]string{"source": "host"}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Minute)
	reg.ReapIdle()
	reg.mu.Lock()
	refs, bound := len(reg.refs), len(def.bound)
	reg.mu.Unlock()
	if refs != 0 || bound != 0 || reg.cache.n != 0 {
		t.Fatalf("after the idle timeout: %d refs, %d bound to the default, %d cached", refs, bound, reg.cache.n)
	}
	if got, _ := reg.Default(); got.Target != def {
		t.Fatal("the default target was stopped")
	}
}
