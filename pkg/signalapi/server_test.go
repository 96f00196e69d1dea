package signalapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/registry"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestGetDefaultAndByRef(t *testing.T) {
	e := newEnv(t, "a", "b")
	e.set("a", 0.4)
	e.set("b", 0.9)
	def := e.acquire(t, registry.Ref{}, map[string]string{"script": "a"})
	ref := registry.Ref{Namespace: "shop", Name: "checkout"}
	byRef := e.acquire(t, ref, map[string]string{"script": "b"})
	ctx := context.Background()

	got, err := e.client.Get(ctx, &barometerv1.GetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wantSignal(t, got, def.Key, 0.4, e.clock.Now())

	got, err = e.client.Get(ctx, &barometerv1.GetRequest{Namespace: ref.Namespace, Name: ref.Name})
	if err != nil {
		t.Fatal(err)
	}
	wantSignal(t, got, byRef.Key, 0.9, e.clock.Now())
	if got.GetStorage() == nil || got.GetReason() == "" || got.GetRecommendedReplicas() < 1 {
		t.Fatalf("signal lacks storage, reason or recommendation: %v", got)
	}
}

func TestGetReportsStaleSignal(t *testing.T) {
	e := newEnv(t, "a")
	e.acquire(t, registry.Ref{}, map[string]string{})
	e.clock.Advance(3*interval + time.Millisecond) // no sample meanwhile
	got, err := e.client.Get(context.Background(), &barometerv1.GetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.GetStale() {
		t.Fatal("a signal older than 3 intervals is not marked stale")
	}
}

func TestGetErrors(t *testing.T) {
	e := newEnv(t, "a") // no default target, one ScaledObject
	e.acquire(t, registry.Ref{Namespace: "shop", Name: "checkout"}, map[string]string{})
	for _, tc := range []struct {
		name      string
		req       *barometerv1.GetRequest
		code      codes.Code
		inMessage string
	}{
		{"unknown ScaledObject", &barometerv1.GetRequest{Namespace: "shop", Name: "cart"}, codes.NotFound, "shop/cart"},
		{"no default target", &barometerv1.GetRequest{}, codes.Unavailable, "no default target"},
		{"name without namespace", &barometerv1.GetRequest{Name: "cart"}, codes.InvalidArgument, "give both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.Get(context.Background(), tc.req)
			wantStatus(t, err, tc.code, tc.inMessage)
		})
	}
}

func wantSignal(t *testing.T, got *barometerv1.ScalingSignal, key string, cpu float64, sampledAt time.Time) {
	t.Helper()
	if got.GetTarget() != key {
		t.Fatalf("target %q, want %q", got.GetTarget(), key)
	}
	if got.GetStale() {
		t.Fatal("fresh signal marked stale")
	}
	if r := got.GetCompute().GetResource(); r != cpu {
		t.Fatalf("compute.resource %v, want %v", r, cpu)
	}
	if at := got.GetSampledAt().AsTime(); !at.Equal(sampledAt) {
		t.Fatalf("sampled_at %v, want %v", at, sampledAt)
	}
}

func wantStatus(t *testing.T, err error, code codes.Code, inMessage string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || !strings.Contains(st.Message(), inMessage) {
		t.Fatalf("got %v, want %v with %q in the message", err, code, inMessage)
	}
}
