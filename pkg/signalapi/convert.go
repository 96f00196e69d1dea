package signalapi

import (
	"math"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/signalview"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// ToProto converts a rendered signal to its wire form. The view is
// signalview.Signal, the one outward shape of a signal that HTTP /scale
// serves too, so the two surfaces cannot drift apart field by field; the
// proto message carries the stale flag but not its reason.
func ToProto(v *signalview.Signal) *barometerv1.ScalingSignal {
	out := &barometerv1.ScalingSignal{
		Target:                 v.Target,
		Stale:                  v.Stale,
		ScaleValue:             v.ScaleValue,
		RawScaleValue:          v.RawScaleValue,
		Forecast:               v.Forecast,
		ForecastHistoryPending: v.ForecastHistoryPending,
		RecommendedReplicas:    toInt32(v.RecommendedReplicas),
		Dominant:               dimensionToProto(v.Dominant),
		Compute:                computeToProto(&v.Compute),
		Storage:                storageToProto(&v.Storage),
		Reason:                 v.Reason,
		Held:                   v.Held,
		ReasonParts:            partsToProto(v.Parts),
		ScaleInAllowed:         v.ScaleInAllowed,
		SplitInFlight:          v.SplitInFlight,
		Policy:                 v.Policy,
		Action:                 v.Action,
		Cost:                   &barometerv1.Cost{ReplicaSeconds: v.Cost.ReplicaSeconds, Cost: v.Cost.Cost},
	}
	// Unset, not the epoch, while warming up: a client tests presence.
	if v.MeasuredAt != nil {
		out.MeasuredAt = timestamppb.New(*v.MeasuredAt)
	}
	if v.SampledAt != nil {
		out.SampledAt = timestamppb.New(*v.SampledAt)
	}
	return out
}

// FromProto is ToProto's inverse, for Go clients that want the signal
// package's types (and its WarmingUp, Hottest helpers) back. It drops target
// and stale, which are facts about the target, not the signal.
func FromProto(p *barometerv1.ScalingSignal) signal.ScalingSignal {
	s := signal.ScalingSignal{
		ScaleValue:             p.GetScaleValue(),
		RawScaleValue:          p.GetRawScaleValue(),
		Forecast:               p.GetForecast(),
		ForecastHistoryPending: p.GetForecastHistoryPending(),
		RecommendedReplicas:    int(p.GetRecommendedReplicas()),
		Dominant:               dimensionFromProto(p.GetDominant()),
		Compute:                computeFromProto(p.GetCompute()),
		Storage:                storageFromProto(p.GetStorage()),
		Reason:                 p.GetReason(),
		Held:                   p.GetHeld(),
		Parts:                  partsFromProto(p.GetReasonParts()),
		ScaleInAllowed:         p.GetScaleInAllowed(),
		SplitInFlight:          p.GetSplitInFlight(),
		Policy:                 p.GetPolicy(),
		Action:                 p.GetAction(),
		Cost:                   signal.Cost{ReplicaSeconds: p.GetCost().GetReplicaSeconds(), Cost: p.GetCost().GetCost()},
	}
	if p.GetMeasuredAt() != nil {
		s.MeasuredAt = p.GetMeasuredAt().AsTime()
	}
	if p.GetSampledAt() != nil {
		s.SampledAt = p.GetSampledAt().AsTime()
	}
	return s
}

// computeToProto and storageToProto may share the view's slices: the view
// is already a copy, made for this message alone.
func computeToProto(c *signalview.Compute) *barometerv1.ComputePressure {
	out := &barometerv1.ComputePressure{
		Activation:       c.Activation,
		Resource:         c.Resource,
		WalDispatch:      c.WalDispatch,
		WalSaturation:    walStateToProto(c.WalSaturation),
		ReplicaCount:     toInt32(c.ReplicaCount),
		Missing:          c.Missing,
		WorkingSetDemand: c.WorkingSetDemand,
	}
	for _, r := range c.Replicas {
		out.Replicas = append(out.Replicas, &barometerv1.ReplicaPressure{
			Name:          r.Name,
			Activation:    r.Activation,
			Resource:      r.Resource,
			WalDispatch:   r.WalDispatch,
			WalSaturation: walStateToProto(r.WalSaturation),
		})
	}
	return out
}

func computeFromProto(p *barometerv1.ComputePressure) pressure.ComputePressure {
	c := pressure.ComputePressure{
		Activation:    p.GetActivation(),
		Resource:      p.GetResource(),
		WalDispatch:   p.GetWalDispatch(),
		WalSaturation: walStateFromProto(p.GetWalSaturation()),
		ReplicaCount:  int(p.GetReplicaCount()),
		Missing:       p.GetMissing(),
	}
	if p.WorkingSetDemand != nil {
		d := p.GetWorkingSetDemand()
		c.WorkingSetDemand = &d
	}
	for _, r := range p.GetReplicas() {
		c.Replicas = append(c.Replicas, pressure.ReplicaPressure{
			Name:          r.GetName(),
			Activation:    r.GetActivation(),
			Resource:      r.GetResource(),
			WalDispatch:   r.GetWalDispatch(),
			WalSaturation: walStateFromProto(r.GetWalSaturation()),
		})
	}
	return c
}

func storageToProto(s *signalview.Storage) *barometerv1.StoragePressure {
	out := &barometerv1.StoragePressure{
		OverThreshold:    s.OverThreshold,
		WalRetainedBytes: s.WalRetainedBytes,
	}
	for _, a := range s.Accounts {
		out.Accounts = append(out.Accounts, &barometerv1.WalAccountPressure{
			ProviderKey:      a.ProviderKey,
			WalRetainedBytes: a.WalRetainedBytes,
			BudgetBytes:      a.BudgetBytes,
			Saturation:       walStateToProto(a.Saturation),
			Classification:   classToProto(a.Classification),
			OverThreshold:    a.OverThreshold,
		})
	}
	if r := s.Recommendation; r != nil {
		out.Recommendation = &barometerv1.WalRebalanceRecommendation{
			Tree:               r.Tree,
			Partition:          toInt32(r.Partition),
			CurrentProviderKey: r.CurrentProviderKey,
			TargetProviderKey:  r.TargetProviderKey,
			Rationale:          r.Rationale,
			HasHeadroom:        r.HasHeadroom,
			Classification:     classToProto(r.Classification),
		}
	}
	return out
}

func storageFromProto(p *barometerv1.StoragePressure) pressure.StoragePressure {
	s := pressure.StoragePressure{
		OverThreshold:    p.GetOverThreshold(),
		WalRetainedBytes: p.GetWalRetainedBytes(),
		// Never nil, as the sampler publishes it: JSON surfaces serve [].
		Accounts: make([]pressure.WalAccountPressure, 0, len(p.GetAccounts())),
	}
	for _, a := range p.GetAccounts() {
		s.Accounts = append(s.Accounts, pressure.WalAccountPressure{
			ProviderKey:      a.GetProviderKey(),
			WalRetainedBytes: a.GetWalRetainedBytes(),
			BudgetBytes:      a.GetBudgetBytes(),
			Saturation:       walStateFromProto(a.GetSaturation()),
			Classification:   classFromProto(a.GetClassification()),
			OverThreshold:    a.GetOverThreshold(),
		})
	}
	if r := p.GetRecommendation(); r != nil {
		s.Recommendation = &pressure.WalRebalanceRecommendation{
			Tree:               r.GetTree(),
			Partition:          int(r.GetPartition()),
			CurrentProviderKey: r.GetCurrentProviderKey(),
			TargetProviderKey:  r.GetTargetProviderKey(),
			Rationale:          r.GetRationale(),
			HasHeadroom:        r.GetHasHeadroom(),
			Classification:     classFromProto(r.GetClassification()),
		}
	}
	return s
}

// toInt32 saturates instead of wrapping: replica counts and partitions are
// far inside int32, and a wrapped negative count would be worse than a
// clipped one if that ever stopped being true.
func toInt32(v int) int32 {
	return int32(max(math.MinInt32, min(v, math.MaxInt32)))
}
