package registry

import (
	"fmt"
	"sync/atomic"
)

// Limits bound what callers can make a registry hold, so that one caller
// cannot exhaust the scaler: every ScaledObject may carry any metadata, and
// the gRPC port takes calls from anything that reaches it.
type Limits struct {
	// Targets bounds the samplers running at once; <= 0 means
	// DefaultMaxTargets.
	Targets int
	// TargetsPerNamespace bounds the samplers the ScaledObjects of one
	// namespace may start; <= 0 means DefaultMaxTargetsPerNamespace.
	TargetsPerNamespace int
	// RefsPerTarget bounds the ScaledObjects one target keeps track of;
	// <= 0 means DefaultMaxRefsPerTarget.
	RefsPerTarget int
}

// Defaults of Limits.
const (
	DefaultMaxTargets             = 1000
	DefaultMaxTargetsPerNamespace = 100
	DefaultMaxRefsPerTarget       = 1000
)

func (l Limits) withDefaults() Limits {
	if l.Targets <= 0 {
		l.Targets = DefaultMaxTargets
	}
	if l.TargetsPerNamespace <= 0 {
		l.TargetsPerNamespace = DefaultMaxTargetsPerNamespace
	}
	if l.RefsPerTarget <= 0 {
		l.RefsPerTarget = DefaultMaxRefsPerTarget
	}
	return l
}

// The limits by name, as LimitError and the refusal counts name them.
const (
	LimitTargets             = "targets"
	LimitTargetsPerNamespace = "targets_per_namespace"
	LimitRefsPerTarget       = "refs_per_target"
)

// LimitError is a call refused because it would pass a limit. Surfaces map
// it to ResourceExhausted; the message names the limit and the setting that
// raises it.
type LimitError struct {
	Limit   string // one of the Limit* names
	Max     int
	Setting string // the environment variable that sets it
	Scope   string // the namespace or target it applies to, if any
}

func (e *LimitError) Error() string {
	what := map[string]string{
		LimitTargets:             "targets (samplers) running",
		LimitTargetsPerNamespace: "targets started by the ScaledObjects of namespace " + e.Scope,
		LimitRefsPerTarget:       "ScaledObjects served by target " + e.Scope,
	}[e.Limit]
	return fmt.Sprintf("at most %d %s; raise %s to allow more", e.Max, what, e.Setting)
}

// settings name the environment variable of each limit; the registry knows
// them only to say so in its errors.
var settings = map[string]string{
	LimitTargets:             "BAROMETER_MAX_TARGETS",
	LimitTargetsPerNamespace: "BAROMETER_MAX_TARGETS_PER_NAMESPACE",
	LimitRefsPerTarget:       "BAROMETER_MAX_REFS_PER_TARGET",
}

// refusals counts calls refused by each limit.
type refusals struct {
	targets, perNamespace, refs atomic.Uint64
}

func (r *Registry) refuse(limit string, max int, scope string) error {
	switch limit {
	case LimitTargets:
		r.refused.targets.Add(1)
	case LimitTargetsPerNamespace:
		r.refused.perNamespace.Add(1)
	case LimitRefsPerTarget:
		r.refused.refs.Add(1)
	}
	return &LimitError{Limit: limit, Max: max, Setting: settings[limit], Scope: scope}
}

// Refusals returns how many calls each limit refused, by limit name.
func (r *Registry) Refusals() map[string]uint64 {
	return map[string]uint64{
		LimitTargets:             r.refused.targets.Load(),
		LimitTargetsPerNamespace: r.refused.perNamespace.Load(),
		LimitRefsPerTarget:       r.refused.refs.Load(),
	}
}
