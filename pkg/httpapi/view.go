package httpapi

import (
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// scaleView is the /scale body. Its fields, their names and their order are
// the original endpoint's (signal-semantics.md, "HTTP shape of the
// original"), so a metrics-api trigger or a dashboard written against it
// reads Barometer unchanged; stale, target, policy, action and cost come
// after them (and staleReason last, when there is one). The view is
// declared here rather than borrowed from the signal's own JSON tags so
// that a field added to the core cannot silently change this contract.
type scaleView struct {
	ScaleValue          float64     `json:"scaleValue"`
	RecommendedReplicas int         `json:"recommendedReplicas"`
	Compute             computeView `json:"compute"`
	Storage             storageView `json:"storage"`
	Reason              string      `json:"reason"`
	// SampledAt is RFC 3339 with nanoseconds, in UTC; null while warming up.
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
	Policy string   `json:"policy"`
	Action string   `json:"action"`
	Cost   costView `json:"cost"`
	// StaleReason says why a stale signal is stale (and the last sampling
	// error, if any); absent when fresh.
	StaleReason string `json:"staleReason,omitempty"`
}

type costView struct {
	ReplicaSeconds float64 `json:"replicaSeconds"`
	Cost           float64 `json:"cost"`
}

type computeView struct {
	Activation    float64                     `json:"activation"`
	Resource      float64                     `json:"resource"`
	WalDispatch   float64                     `json:"walDispatch"`
	WalSaturation pressure.WalSaturationState `json:"walSaturation"`
}

type storageView struct {
	OverThreshold    bool                `json:"overThreshold"`
	WalRetainedBytes int64               `json:"walRetainedBytes"`
	Accounts         []accountView       `json:"accounts"`
	Recommendation   *recommendationView `json:"recommendation"`
}

type accountView struct {
	ProviderKey      string                         `json:"providerKey"`
	WalRetainedBytes int64                          `json:"walRetainedBytes"`
	Saturation       pressure.WalSaturationState    `json:"saturation"`
	Classification   pressure.AccountClassification `json:"classification"`
	OverThreshold    bool                           `json:"overThreshold"`
}

type recommendationView struct {
	Tree               string                         `json:"tree"`
	Partition          int                            `json:"partition"`
	CurrentProviderKey string                         `json:"currentProviderKey"`
	TargetProviderKey  string                         `json:"targetProviderKey"`
	Rationale          string                         `json:"rationale"`
	HasHeadroom        bool                           `json:"hasHeadroom"`
	Classification     pressure.AccountClassification `json:"classification"`
}

// newScaleView renders one signal; staleness is decided by the caller.
func newScaleView(sig *signal.ScalingSignal, key string, staleErr error) scaleView {
	v := scaleView{
		ScaleValue:          sig.ScaleValue,
		RecommendedReplicas: sig.RecommendedReplicas,
		Compute: computeView{
			Activation:    sig.Compute.Activation,
			Resource:      sig.Compute.Resource,
			WalDispatch:   sig.Compute.WalDispatch,
			WalSaturation: sig.Compute.WalSaturation,
		},
		Storage:       newStorageView(&sig.Storage),
		Reason:        sig.Reason,
		RawScaleValue: sig.RawScaleValue,
		Stale:         staleErr != nil,
		Target:        key,
		Policy:        sig.Policy,
		Action:        sig.Action,
		Cost:          costView{ReplicaSeconds: sig.Cost.ReplicaSeconds, Cost: sig.Cost.Cost},
	}
	if !sig.WarmingUp() {
		at := sig.SampledAt.UTC()
		v.SampledAt = &at
	}
	if staleErr != nil {
		v.StaleReason = staleErr.Error()
	}
	return v
}

func newStorageView(st *pressure.StoragePressure) storageView {
	v := storageView{
		OverThreshold:    st.OverThreshold,
		WalRetainedBytes: st.WalRetainedBytes,
		// Never null: a client iterates accounts without a nil check.
		Accounts: make([]accountView, 0, len(st.Accounts)),
	}
	for _, a := range st.Accounts {
		v.Accounts = append(v.Accounts, accountView{
			ProviderKey:      a.ProviderKey,
			WalRetainedBytes: a.WalRetainedBytes,
			Saturation:       a.Saturation,
			Classification:   a.Classification,
			OverThreshold:    a.OverThreshold,
		})
	}
	if r := st.Recommendation; r != nil {
		v.Recommendation = &recommendationView{
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
