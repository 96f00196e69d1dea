package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
)

// Kind is one replica policy as a trigger's `policy` key names it: its own
// keys, and how its parsed options become a Spec that decides. Each policy
// declares its kind beside its rule (queue_kind.go, elasticity.go), and
// Kinds lists them: pkg/trigger, pkg/decide and the simulator iterate over
// that list and never name a policy.
type Kind struct {
	Name string
	Doc  string
	// ReadsQueue: the policy reads the work queue, so a sample whose
	// source reported none fails.
	ReadsQueue bool
	// Poolable: targets of the policy may be decided as one (the `pool`
	// key; Spec.NewPool).
	Poolable bool
	keys     []keyschema.Info
	parse    func(r *keyschema.Reading) (Spec, []string, error)
}

// Kinds are the replica policies, in the order the `policy` key lists them.
func Kinds() []Kind { return []Kind{Queue, Fixed, FullyElastic, MaxCount, PoolWithThreshold} }

// Names are the kinds' names, in the order of Kinds.
func Names() []string {
	out := make([]string, 0, 5)
	for _, k := range Kinds() {
		out = append(out, k.Name)
	}
	return out
}

// KindNamed returns the kind a `policy` value names.
func KindNamed(name string) (Kind, bool) {
	i := slices.IndexFunc(Kinds(), func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return Kinds()[i], true
}

// Keys describes the kind's own keys, each naming the kind as its only
// reader.
func (k Kind) Keys() []keyschema.Info { return k.keys }

// Parse reads the kind's keys from r and builds its spec; texts are the
// canonical values of its keys, which enter the trigger's identity.
func (k Kind) Parse(r *keyschema.Reading) (spec Spec, texts []string, err error) {
	return k.parse(r)
}

// FromMetadata builds the kind's spec from metadata holding only its own
// keys, as a trigger of the policy would: for callers that configure a
// policy without a trigger (the simulator). A key the kind does not read is
// refused.
func (k Kind) FromMetadata(raw map[string]string) (Spec, error) {
	r, err := keyschema.NewReading(raw, nil, keyschema.Context{Policy: k.Name})
	if err != nil {
		return nil, err
	}
	spec, _, err := k.parse(r)
	if err != nil {
		return nil, err
	}
	if err := r.Unknown(func(string) ([]string, []string) { return nil, nil }); err != nil {
		return nil, err
	}
	return spec, nil
}

// newKind declares a policy kind whose options are a C: zero is its
// starting value (the documented defaults), keys fill it, checks relate
// its keys, and build validates it into a Spec.
func newKind[C any](k Kind, zero func() C, keys []keyschema.Key[C], checks []keyschema.Check[C], build func(C) (Spec, error)) Kind {
	k.keys = make([]keyschema.Info, len(keys))
	for i, key := range keys {
		k.keys[i] = key.Info
		k.keys[i].Policies = []string{k.Name}
	}
	k.parse = func(r *keyschema.Reading) (Spec, []string, error) {
		opts := zero()
		texts, err := keyschema.Apply(r, keys, checks, &opts)
		if err != nil {
			return nil, nil, err
		}
		spec, err := build(opts)
		if err != nil {
			return nil, nil, fmt.Errorf("policy %s: %w", k.Name, err)
		}
		return spec, texts, nil
	}
	return k
}

// Spec is a policy's validated options.
type Spec interface {
	// New returns the decider of one target, with its own state.
	New() Decider
	// NewPool returns the decider of a pool of targets that share these
	// options; false when the policy is not decided in pools.
	NewPool() (PoolDecider, bool)
}

// Observation is one sample as every replica policy reads it. Each caller
// fills it from its own sample (pkg/decide from a source's work queue, the
// simulator from its model), and each policy reads the part it needs.
type Observation struct {
	// Replicas is the replicas visible now; InFlight the net change not yet
	// visible, launches less removals (LaunchTracker.Observe).
	Replicas, InFlight int
	// Queue is the work queue's counters and gauges (its Replicas and
	// InFlight are the fields above).
	Queue QueueObservation
	// Pending is the work waiting for a replica, in items.
	Pending int
	// Busy is the work running now, in slots, across the Answered replicas
	// whose queue was read: utilization is Busy / (Answered x slots).
	Busy     float64
	Answered int
}

// Decider decides one target's samples and keeps the policy's state
// between them. One goroutine calls it at a time.
type Decider interface {
	Decide(obs Observation, now time.Time) Decision
}

// PoolDecider decides a pool of targets as one, keeping the pool's state.
// One goroutine calls it at a time.
type PoolDecider interface {
	DecidePool(pool string, members []Member, now time.Time) PoolDecision
}

// Member is one target of a pool and its sample.
type Member struct {
	Target      string
	Observation Observation
}

// MaxReplicaBound bounds every replica count a trigger names.
const MaxReplicaBound = 10000

// The keys several policies read, each declared once here and used by the
// kinds that read it.

func minReplicasKey[C any](f keyschema.Field[C, int]) keyschema.Key[C] {
	return keyschema.Int("minReplicas", f, 0, 0, MaxReplicaBound).
		Describe("lower bound of the decided count (a pool's total)")
}

func maxReplicasKey[C any](f keyschema.Field[C, int], def int) keyschema.Key[C] {
	k := keyschema.Int("maxReplicas", f, def, 0, MaxReplicaBound).
		Format(func(c *C) string { return BoundText(*f(c)) }).
		Describe("upper bound of the decided count")
	return k.Documented(BoundText(def))
}

func slotsPerReplicaKey[C any](f keyschema.Field[C, int]) keyschema.Key[C] {
	return keyschema.Int("slotsPerReplica", f, 1, 1, MaxReplicaBound).
		Describe("runs one replica serves at once: the queue policy's replicas are ceil(slots / it), utilization is busy / (replicas x it)")
}
