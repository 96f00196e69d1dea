// Package targettest provides a scripted pressure source, a source kind
// offering it, and a registry that runs for one test. It is for tests only.
package targettest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/target"
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

var errUnscripted = errors.New("targettest: nothing scripted")

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

// Register offers source kind kind on sources. Metadata key "script" names
// the script to sample (def when absent) and lookup returns it; a nil
// script rejects the metadata with a *target.MetadataError on that key.
// The source's key is kind/name.
func Register(sources *target.Sources, kind, def string, lookup func(name string) *Script) {
	sources.Register(kind, func(p *target.Params) (target.SourceSpec, error) {
		name := p.String(Key, def)
		src := lookup(name)
		if src == nil {
			return nil, &target.MetadataError{Key: Key, Value: name, Allowed: "a script the test made"}
		}
		return spec{key: kind + "/" + name, src: src}, nil
	})
}

// NewRegistry returns a registry that runs until the test ends; its
// cleanup waits for every sampler to stop.
func NewRegistry(t testing.TB, cfg target.Config) *target.Registry {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reg := target.NewRegistry(ctx, cfg)
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
func WaitSamples(t testing.TB, tg *target.Target, n uint64) {
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
