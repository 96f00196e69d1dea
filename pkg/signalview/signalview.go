// Package signalview is the one outward shape of a published signal: the
// fields a reader outside the process sees, their names, their nesting and,
// for HTTP /scale, their order. /scale serves a Signal as JSON
// (encoding/json, through the tags below) and pkg/signalapi converts the
// same Signal to barometer.v1.ScalingSignal, so a field is added, renamed
// or dropped here, once, and each surface follows from it.
//
// Why a Go view type and not protojson over the proto message: protojson
// cannot reproduce /scale byte for byte, and the field names and order of
// /scale are a contract (pkg/httpapi's scale tests, README's example). It
// prints int64 fields as JSON strings ("walRetainedBytes":"0"), enums by
// their proto names (WAL_SATURATION_STATE_THROTTLED, not Throttled),
// timestamps with 3, 6 or 9 fractional digits (".120Z" where /scale has
// ".12Z"), and it inserts spaces at random on purpose, so its bytes are not
// stable between builds. It has no way to leave out a field, while /scale
// carries no dominant, held, scale-in, split, replica detail or budget, and
// it cannot add staleReason, which the proto message does not have. Each
// fix would need a second proto message shaped like /scale, which is the
// mirror this package replaces.
package signalview

import (
	"slices"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// Signal is one published signal as the outside sees it. The fields with a
// JSON name are /scale's, in /scale's order: first the fields of the
// signal's original endpoint (docs/semantics.md, "HTTP shape of /scale"),
// so a metrics-api trigger or a dashboard written for it reads Barometer
// unchanged, then stale, target, policy, action and cost, and staleReason
// last, when there is one. The fields tagged "-" are carried
// by the gRPC API only; /scale's field set is fixed, so a new field starts
// there too unless /scale is meant to grow. Every field of
// signal.ScalingSignal has a place here: pkg/signalapi's round-trip test
// fills each one and fails when the view drops it.
type Signal struct {
	ScaleValue          float64 `json:"scaleValue"`
	RecommendedReplicas int     `json:"recommendedReplicas"`
	Compute             Compute `json:"compute"`
	Storage             Storage `json:"storage"`
	Reason              string  `json:"reason"`
	// SampledAt is in UTC (JSON: RFC 3339 with nanoseconds); nil while
	// warming up, so /scale serves null and the proto leaves it unset.
	SampledAt     *time.Time `json:"sampledAt"`
	RawScaleValue float64    `json:"rawScaleValue"`
	// Stale is true when the signal is older than 3 x its sample interval,
	// or has never been sampled.
	Stale bool `json:"stale"`
	// Target is the key of the target (sampler) that produced the signal.
	Target string `json:"target"`
	// Policy names what decided the signal (pressure, or the replica
	// policy of the trigger's policy key); Action is what the decision did
	// to the replica count; Cost is the replicas' accumulated usage.
	Policy string `json:"policy"`
	Action string `json:"action"`
	Cost   Cost   `json:"cost"`
	// DataAgeSeconds is how old the data behind the sample was when it
	// was taken (signal.ScalingSignal.DataAge); null when the source does
	// not say.
	DataAgeSeconds *float64 `json:"dataAgeSeconds"`
	// Forecast is the seasonal forecast of the demand (in replicas at
	// 100 %, like rawScaleValue) where the trigger's `forecast` key turns
	// it on or to `only`; 0 when off or no season was found.
	Forecast float64 `json:"forecast"`
	// ForecastHistoryPending is true while the forecast reads a source's
	// history and none has been read yet (a prometheus source reads it
	// within its first hour): a forecast of 0 then means no history yet,
	// not no season.
	ForecastHistoryPending bool `json:"forecastHistoryPending"`
	// StaleReason says why a stale signal is stale (and the last sampling
	// error, if any); empty, and absent from /scale, when fresh. The proto
	// message carries the flag only.
	StaleReason string `json:"staleReason,omitempty"`

	MeasuredAt     *time.Time       `json:"-"`
	Dominant       signal.Dimension `json:"-"`
	Held           bool             `json:"-"`
	Parts          signal.Parts     `json:"-"`
	ScaleInAllowed bool             `json:"-"`
	SplitInFlight  bool             `json:"-"`
}

// ForTrigger renders sig for a reader whose trigger is tr: New, with
// RecommendedReplicas what KEDA asks for at tr's own target
// (trigger.Reader.Replicas), the one replica count every surface shows. A
// warming-up signal keeps its own.
func ForTrigger(sig *signal.ScalingSignal, target string, staleErr error, tr *trigger.Trigger) Signal {
	v := New(sig, target, staleErr)
	if !sig.WarmingUp() {
		v.RecommendedReplicas = tr.Reader().Replicas(v.ScaleValue)
	}
	return v
}

// Cost is a target's accumulated replica usage.
type Cost struct {
	ReplicaSeconds float64 `json:"replicaSeconds"`
	Cost           float64 `json:"cost"`
}

// Compute is the cluster-aggregate compute axis.
type Compute struct {
	Activation    float64                     `json:"activation"`
	Resource      float64                     `json:"resource"`
	WalDispatch   float64                     `json:"walDispatch"`
	WalSaturation pressure.WalSaturationState `json:"walSaturation"`
	// WorkingSetDemand is pressure.ComputePressure's, absent (null) when no
	// replica reports a working set.
	WorkingSetDemand *float64 `json:"workingSetDemand,omitempty"`

	ReplicaCount int       `json:"-"`
	Replicas     []Replica `json:"-"`
	Missing      []string  `json:"-"`
}

// Replica is one replica's normalised compute pressure (gRPC only).
type Replica struct {
	Name          string
	Activation    float64
	Resource      float64
	WalDispatch   float64
	WalSaturation pressure.WalSaturationState
}

// Storage is the storage axis.
type Storage struct {
	OverThreshold    bool      `json:"overThreshold"`
	WalRetainedBytes int64     `json:"walRetainedBytes"`
	Accounts         []Account `json:"accounts"`
	// Recommendation is nil (null in /scale, unset in the proto) when no
	// rebalance is proposed.
	Recommendation *Recommendation `json:"recommendation"`
}

// Account is one storage account's share of the WAL.
type Account struct {
	ProviderKey      string                         `json:"providerKey"`
	WalRetainedBytes int64                          `json:"walRetainedBytes"`
	Saturation       pressure.WalSaturationState    `json:"saturation"`
	Classification   pressure.AccountClassification `json:"classification"`
	OverThreshold    bool                           `json:"overThreshold"`

	BudgetBytes int64 `json:"-"`
}

// Recommendation proposes moving one partition off a hot account.
type Recommendation struct {
	Tree               string                         `json:"tree"`
	Partition          int                            `json:"partition"`
	CurrentProviderKey string                         `json:"currentProviderKey"`
	TargetProviderKey  string                         `json:"targetProviderKey"`
	Rationale          string                         `json:"rationale"`
	HasHeadroom        bool                           `json:"hasHeadroom"`
	Classification     pressure.AccountClassification `json:"classification"`
}

// New renders one signal. target and staleness are facts about the target
// that published it, not about the signal, so the caller supplies them:
// staleErr is nil when the signal is fresh.
//
// The view shares nothing mutable with sig: published signals are read by
// every surface at once and must not change if a reader edits its view.
func New(sig *signal.ScalingSignal, target string, staleErr error) Signal {
	v := Signal{
		ScaleValue:             sig.ScaleValue,
		RecommendedReplicas:    sig.RecommendedReplicas,
		Compute:                newCompute(&sig.Compute),
		Storage:                newStorage(&sig.Storage),
		Reason:                 sig.Reason,
		RawScaleValue:          sig.RawScaleValue,
		Forecast:               sig.Forecast,
		ForecastHistoryPending: sig.ForecastHistoryPending,
		Stale:                  staleErr != nil,
		Target:                 target,
		Policy:                 sig.Policy,
		Action:                 sig.Action,
		Cost:                   Cost{ReplicaSeconds: sig.Cost.ReplicaSeconds, Cost: sig.Cost.Cost},
		Dominant:               sig.Dominant,
		Held:                   sig.Held,
		Parts:                  sig.Parts,
		ScaleInAllowed:         sig.ScaleInAllowed,
		SplitInFlight:          sig.SplitInFlight,
	}
	if !sig.WarmingUp() {
		at := sig.SampledAt.UTC()
		v.SampledAt = &at
	}
	if !sig.MeasuredAt.IsZero() {
		at := sig.MeasuredAt.UTC()
		v.MeasuredAt = &at
	}
	if age, ok := sig.DataAge(); ok {
		sec := age.Seconds()
		v.DataAgeSeconds = &sec
	}
	if staleErr != nil {
		v.StaleReason = staleErr.Error()
	}
	return v
}

func newCompute(c *pressure.ComputePressure) Compute {
	v := Compute{
		Activation:    c.Activation,
		Resource:      c.Resource,
		WalDispatch:   c.WalDispatch,
		WalSaturation: c.WalSaturation,
		ReplicaCount:  c.ReplicaCount,
		Missing:       slices.Clone(c.Missing),
	}
	if c.WorkingSetDemand != nil {
		d := *c.WorkingSetDemand
		v.WorkingSetDemand = &d
	}
	if len(c.Replicas) > 0 {
		v.Replicas = make([]Replica, 0, len(c.Replicas))
	}
	for _, r := range c.Replicas {
		v.Replicas = append(v.Replicas, Replica{
			Name:          r.Name,
			Activation:    r.Activation,
			Resource:      r.Resource,
			WalDispatch:   r.WalDispatch,
			WalSaturation: r.WalSaturation,
		})
	}
	return v
}

func newStorage(st *pressure.StoragePressure) Storage {
	v := Storage{
		OverThreshold:    st.OverThreshold,
		WalRetainedBytes: st.WalRetainedBytes,
		// Never nil: /scale serves [], and a client iterates accounts
		// without a nil check.
		Accounts: make([]Account, 0, len(st.Accounts)),
	}
	for _, a := range st.Accounts {
		v.Accounts = append(v.Accounts, Account{
			ProviderKey:      a.ProviderKey,
			WalRetainedBytes: a.WalRetainedBytes,
			Saturation:       a.Saturation,
			Classification:   a.Classification,
			OverThreshold:    a.OverThreshold,
			BudgetBytes:      a.BudgetBytes,
		})
	}
	if r := st.Recommendation; r != nil {
		v.Recommendation = &Recommendation{
			Tree:               r.Tree,
			Partition:          r.Partition,
			CurrentProviderKey: r.CurrentProviderKey,
			TargetProviderKey:  r.TargetProviderKey,
			Rationale:          r.Rationale,
			HasHeadroom:        r.HasHeadroom,
			Classification:     r.Classification,
		}
	}
	return v
}
