package otlp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/pressure/discovery"
	"github.com/barometer-scaler/barometer/pkg/pressure/otlp/store"
)

// pool is the workload's pods as its Service's EndpointSlices list them:
// what the workload is, whoever has pushed.
type pool struct {
	state                        map[string]discovery.State
	ready, starting, terminating []string // sorted
}

// leftOut says a replica is a pod the slices list as starting or
// terminating: named, not read, as the scrape source treats them.
func (p *pool) leftOut(name string) bool {
	if p == nil {
		return false
	}
	st, ok := p.state[name]
	return ok && st != discovery.Ready
}

// readPool reads the pool from the namespace's informers (no API call),
// watching the namespace from the first sample on.
func (s *Source) readPool(ctx context.Context) (*pool, error) {
	s.poolMu.Lock()
	if s.poolNS == nil {
		s.poolNS, s.poolRelease = s.cfg.Pool.Acquire(s.cfg.Namespace)
	}
	ns := s.poolNS
	s.poolMu.Unlock()
	eps, err := ns.Endpoints(ctx, s.cfg.PoolService, "")
	if err != nil {
		return nil, err
	}
	p := &pool{state: map[string]discovery.State{}}
	for _, ep := range eps {
		if old, ok := p.state[ep.Pod]; ep.Pod == "" || ok && old <= ep.State {
			continue // not a pod's, or a pod already seen in a state as live
		}
		p.state[ep.Pod] = ep.State
	}
	for name, st := range p.state {
		switch st {
		case discovery.Ready:
			p.ready = append(p.ready, name)
		case discovery.Starting:
			p.starting = append(p.starting, name)
		default:
			p.terminating = append(p.terminating, name)
		}
	}
	for _, l := range [][]string{p.ready, p.starting, p.terminating} {
		slices.Sort(l)
	}
	return p, nil
}

// Close stops watching the pool's namespace (the last source there stops
// the watch).
func (s *Source) Close() error {
	s.poolMu.Lock()
	release := s.poolRelease
	s.poolNS, s.poolRelease = nil, nil
	s.poolMu.Unlock()
	if release != nil {
		release()
	}
	return nil
}

// waitForPool fails a sample that cannot know the pool is whole, so the
// previous signal stands rather than fall to the replicas heard so far.
// With a pool, each ready pod that has never pushed to this scaler is
// waited for until maxAge after the source first saw it ready, then read
// as missing; starting and terminating pods are named. Without one,
// every sample waits until maxAge after the store began to hold every
// push (HeldSince): by then every live replica has pushed again.
// Called with s.mu held.
func (s *Source) waitForPool(replicas []store.Replica, pods *pool, now time.Time, obs *pressure.Observation) error {
	if pods == nil {
		if s.cfg.HeldSince == nil {
			return nil
		}
		held := now.Sub(s.cfg.HeldSince())
		if held >= s.cfg.MaxAge {
			return nil
		}
		return fmt.Errorf("otlp: waiting for the pool: this scaler has held the pushes only for %s (since it started; no peer's state reached it), "+
			"and a replica that pushed before may not have pushed again; its first sample waits until maxAge %s has passed (poolService reads the pool from Kubernetes instead)",
			held.Round(time.Millisecond), s.cfg.MaxAge)
	}
	obs.Starting, obs.Terminating = pods.starting, pods.terminating
	cutoff := now.Add(-s.cfg.MaxAge)
	known, fresh := map[string]bool{}, map[string]bool{}
	for _, r := range replicas {
		known[r.Name] = true
		fresh[r.Name] = !r.Newest.Before(cutoff)
	}
	for name := range s.seen {
		if st, ok := pods.state[name]; !ok || st != discovery.Ready {
			delete(s.seen, name)
		}
	}
	var waiting []string
	for _, name := range pods.ready {
		first, ok := s.seen[name]
		if !ok {
			first = now
			s.seen[name] = now
		}
		switch {
		case fresh[name]:
		case known[name]: // pushed, then stopped: fold named it
		case now.Sub(first) < s.cfg.MaxAge:
			waiting = append(waiting, name)
		default:
			obs.Missing = append(obs.Missing, pressure.MissingReplica{Name: name,
				Err: fmt.Errorf("ready in Service %s, and no push within maxAge %s", s.cfg.PoolService, s.cfg.MaxAge)})
		}
	}
	if len(waiting) > 0 {
		return fmt.Errorf("otlp: waiting for %d of the %d ready pods of Service %s to push (%s): a sample reads the whole pool, or reads a pod that has not pushed within maxAge %s of turning ready as missing",
			len(waiting), len(pods.ready), s.cfg.PoolService, strings.Join(waiting, ", "), s.cfg.MaxAge)
	}
	return nil
}
