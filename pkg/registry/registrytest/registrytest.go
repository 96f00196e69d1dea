// Package registrytest provides a scripted pressure source, a source kind
// offering it, and a registry that runs for one test. It is for tests only.
package registrytest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
	"github.com/barometer-scaler/barometer/pkg/registry"
)

// Script is a pressure source whose answer the test sets and may change at
// any time. The zero Script fails every Observe. Safe for concurrent use.
type Script struct {
	mu     sync.Mutex
	answer func(context.Context) (pressure.Observation, error)
}

// Returning returns a script that observes obs.
func Returning(obs pressure.Observation) *Script {
	s := new(Script)
	s.Set(obs)
	return s
}

// Failing returns a script whose every Observe fails with err.
func Failing(err error) *Script {
	s := new(Script)
	s.Fail(err)
	return s
}

// Set makes every later Observe return obs.
func (s *Script) Set(obs pressure.Observation) {
	s.SetFunc(func(context.Context) (pressure.Observation, error) { return obs, nil })
}

// Fail makes every later Observe fail with err.
func (s *Script) Fail(err error) {
	s.SetFunc(func(context.Context) (pressure.Observation, error) { return pressure.Observation{}, err })
}

// SetFunc makes every later Observe answer with fn, called outside the
// script's lock (so fn may block).
func (s *Script) SetFunc(fn func(context.Context) (pressure.Observation, error)) {
	s.mu.Lock()
	s.answer = fn
	s.mu.Unlock()
}

var errUnscripted = errors.New("registrytest: nothing scripted")

// Observe implements pressure.Source.
func (s *Script) Observe(ctx context.Context) (pressure.Observation, error) {
	s.mu.Lock()
	fn := s.answer
	s.mu.Unlock()
	if fn == nil {
		return pressure.Observation{}, errUnscripted
	}
	return fn(ctx)
}

// Key is the metadata key that names a script.
const Key = "script"

// spec is one named script: equal names share a sampler.
type spec struct {
	key string
	src *Script
}

func (s spec) Key() string                               { return s.key }
func (s spec) New(*slog.Logger) (pressure.Source, error) { return s.src, nil }

// Kind is a source kind that offers scripts. Metadata key "script" names
// the script to sample (def when absent) and lookup returns it; a nil
// script rejects the metadata with a *keyschema.MetadataError on that key.
// The source's key is kind/name.
func Kind(kind, def string, lookup func(name string) *Script) sourcekind.Kind {
	type config struct{ name string }
	keys := []keyschema.Key[config]{
		keyschema.String(Key, func(c *config) *string { return &c.name }, def, "a script the test made", nil).
			Describe("the script to sample"),
	}
	return sourcekind.New(kind, "a script the test made", func() config { return config{} }, keys, nil,
		func(c config) (sourcekind.Spec, error) {
			src := lookup(c.name)
			if src == nil {
				return nil, &keyschema.MetadataError{Key: Key, Value: c.name, Allowed: "a script the test made"}
			}
			return spec{key: kind + "/" + c.name, src: src}, nil
		})
}

// NewRegistry returns a registry that runs until the test ends; its
// cleanup waits for every sampler to stop.
func NewRegistry(t testing.TB, cfg registry.Config) *registry.Registry {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reg := registry.NewRegistry(ctx, cfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		reg.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return reg
}

// WaitSamples waits until tg has attempted n samples, successful or not,
// and fails t when they do not come within 10s.
func WaitSamples(t testing.TB, tg *registry.Target, n uint64) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for snap := tg.Load(); snap.Samples < n; snap = tg.Load() {
		select {
		case <-snap.Next():
		case <-deadline.C:
			t.Fatalf("target %s: %d sample attempts within 10s, want %d", tg.Key, snap.Samples, n)
		}
	}
}
