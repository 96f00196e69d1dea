package decide

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
)

// A pool is decided as one (policy.DecidePool), but its members sample on
// their own timers. The pool keeps each member's latest signals; the first
// member to sample in a new tick decides the pool's one step for everybody,
// from its own fresh signals and the others' latest, and the others take
// their share of that decision when they sample in the same tick. A tick is
// the members' common sample interval; a sample starts a new tick once the
// interval less a tenth of it (tickSlack) has passed since the last
// decision. So with any number of members at any offsets, the pool decides
// at most once per 0.9 interval (once per interval while the deciding
// member's ticker keeps time), and a ticker that runs a little early still
// starts the next tick on time.
//
// Members whose signals are missing would make the pool's totals wrong, so
// the first decision waits until every member has sampled once (for at most
// three intervals after it joined), and a member silent for more than three
// intervals (its source failing, say) is left out and named in the reason.
type pool struct {
	name     string
	kind     string             // the members' policy
	key      string             // the options every member agrees on
	policy   policy.PoolDecider // keeps the pool's state; under mu
	tracker  *ledger.LaunchTracker
	interval time.Duration

	mu        sync.Mutex
	members   map[string]*member
	decidedAt time.Time // zero: never
}

// member is one target of a pool.
type member struct {
	decider *replicaDecider
	joined  time.Time
	obs     policy.Observation // InFlight is filled at decision time
	at      time.Time
	seen    bool
	// last is the member's share of the last decision it took part in,
	// made at lastAt.
	last   policy.Decision
	lastAt time.Time
}

func newPool(name, kind, key string, p policy.PoolDecider, tracker *ledger.LaunchTracker, interval time.Duration) *pool {
	return &pool{name: name, kind: kind, key: key, policy: p, tracker: tracker, interval: interval, members: map[string]*member{}}
}

func (p *pool) join(r *replicaDecider, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members[r.key] = &member{decider: r, joined: now}
}

// leave removes r's membership, unless a newer decider of the same key has
// joined since, and returns how many members remain.
func (p *pool) leave(r *replicaDecider) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m, ok := p.members[r.key]; ok && m.decider == r {
		delete(p.members, r.key)
	}
	return len(p.members)
}

// decide records target's signals at now and returns its decision. recorded
// reports that the pool already put the decision in the audit trail (it
// records every member's share when it decides); otherwise the caller does.
func (p *pool) decide(r *replicaDecider, obs policy.Observation, now time.Time) (d policy.Decision, recorded bool) {
	target := r.key
	p.mu.Lock()
	defer p.mu.Unlock()
	me, ok := p.members[target]
	if !ok {
		// Unreachable while release leaves only its own membership; a
		// member that is missing rejoins rather than crash the sampler.
		me = &member{decider: r, joined: now}
		p.members[target] = me
	}
	me.obs, me.at, me.seen = obs, now, true

	if !p.decidedAt.IsZero() && now.Sub(p.decidedAt) < p.interval-p.interval/tickSlack {
		if me.lastAt.Equal(p.decidedAt) {
			return me.last, true
		}
		return p.hold(target, obs, now, fmt.Sprintf("pool %s decided this tick without %s (it had no recent sample): no-op", p.name, target)), false
	}

	var in []policy.Member
	var waiting, left []string
	for _, key := range slices.Sorted(maps.Keys(p.members)) {
		m := p.members[key]
		switch {
		case m.seen && now.Sub(m.at) <= 3*p.interval:
			o := m.obs
			o.InFlight = p.tracker.Observe(key, o.Replicas, now)
			in = append(in, policy.Member{Target: key, Observation: o})
		case !m.seen && now.Sub(m.joined) < 3*p.interval:
			waiting = append(waiting, key)
		default:
			left = append(left, key)
		}
	}
	if len(waiting) > 0 {
		return p.hold(target, obs, now, fmt.Sprintf("pool %s waits for the first sample of %s: no-op", p.name, strings.Join(waiting, ", "))), false
	}

	pd := p.policy.DecidePool(p.name, in, now)
	p.decidedAt = now
	for _, md := range pd.Members {
		d := md.Decision
		if len(left) > 0 {
			d.Reason += "; left out, no sample for 3 intervals: " + strings.Join(left, ", ")
		}
		p.tracker.Record(md.Target, d)
		m := p.members[md.Target]
		m.last, m.lastAt = d, now
		m.decider.record(d)
	}
	return me.last, true
}

// tickSlack: a sample starts a new tick once interval - interval/tickSlack
// has passed since the last decision.
const tickSlack = 10

// hold is a no-op that keeps the member's current count (visible plus the
// net change in flight, so a scale-down not yet seen is kept too), for a
// sample that takes no part in a pool decision.
func (p *pool) hold(target string, obs policy.Observation, now time.Time, reason string) policy.Decision {
	current := max(obs.Replicas+p.tracker.Observe(target, obs.Replicas, now), 0)
	return policy.Decision{At: now, Policy: p.kind, Action: policy.NoOp, Before: current, Desired: current, Reason: reason}
}
