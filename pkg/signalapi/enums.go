package signalapi

import (
	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
)

// The Go enums start at their first meaningful value (Healthy, None,
// Activation) while the proto enums keep 0 for UNSPECIFIED, as buf style
// asks, so that an unset field is never mistaken for a real state. Each
// mapping is therefore Go value + 1, and anything out of range maps to
// UNSPECIFIED (to proto) or the zero value (from proto).

func walStateToProto(s pressure.WalSaturationState) barometerv1.WalSaturationState {
	switch s {
	case pressure.Healthy:
		return barometerv1.WalSaturationState_WAL_SATURATION_STATE_HEALTHY
	case pressure.Throttled:
		return barometerv1.WalSaturationState_WAL_SATURATION_STATE_THROTTLED
	case pressure.Saturated:
		return barometerv1.WalSaturationState_WAL_SATURATION_STATE_SATURATED
	}
	return barometerv1.WalSaturationState_WAL_SATURATION_STATE_UNSPECIFIED
}

func walStateFromProto(s barometerv1.WalSaturationState) pressure.WalSaturationState {
	switch s {
	case barometerv1.WalSaturationState_WAL_SATURATION_STATE_THROTTLED:
		return pressure.Throttled
	case barometerv1.WalSaturationState_WAL_SATURATION_STATE_SATURATED:
		return pressure.Saturated
	}
	return pressure.Healthy
}

func classToProto(c pressure.AccountClassification) barometerv1.AccountClassification {
	switch c {
	case pressure.ClassNone:
		return barometerv1.AccountClassification_ACCOUNT_CLASSIFICATION_NONE
	case pressure.CapacityBound:
		return barometerv1.AccountClassification_ACCOUNT_CLASSIFICATION_CAPACITY_BOUND
	case pressure.ThroughputBound:
		return barometerv1.AccountClassification_ACCOUNT_CLASSIFICATION_THROUGHPUT_BOUND
	}
	return barometerv1.AccountClassification_ACCOUNT_CLASSIFICATION_UNSPECIFIED
}

func classFromProto(c barometerv1.AccountClassification) pressure.AccountClassification {
	switch c {
	case barometerv1.AccountClassification_ACCOUNT_CLASSIFICATION_CAPACITY_BOUND:
		return pressure.CapacityBound
	case barometerv1.AccountClassification_ACCOUNT_CLASSIFICATION_THROUGHPUT_BOUND:
		return pressure.ThroughputBound
	}
	return pressure.ClassNone
}

func dimensionToProto(d signal.Dimension) barometerv1.Dimension {
	switch d {
	case signal.Activation:
		return barometerv1.Dimension_DIMENSION_ACTIVATION
	case signal.Resource:
		return barometerv1.Dimension_DIMENSION_RESOURCE
	case signal.WalDispatch:
		return barometerv1.Dimension_DIMENSION_WAL_DISPATCH
	}
	return barometerv1.Dimension_DIMENSION_UNSPECIFIED
}

func dimensionFromProto(d barometerv1.Dimension) signal.Dimension {
	switch d {
	case barometerv1.Dimension_DIMENSION_RESOURCE:
		return signal.Resource
	case barometerv1.Dimension_DIMENSION_WAL_DISPATCH:
		return signal.WalDispatch
	}
	return signal.Activation
}

// reasonParts pairs each part of a reason with its proto enum, in the
// order the reason names them.
var reasonParts = []struct {
	part  signal.Parts
	proto barometerv1.ReasonPart
}{
	{signal.PartGate, barometerv1.ReasonPart_REASON_PART_GATE},
	{signal.PartLead, barometerv1.ReasonPart_REASON_PART_LEAD},
	{signal.PartHeadroom, barometerv1.ReasonPart_REASON_PART_HEADROOM},
	{signal.PartForecast, barometerv1.ReasonPart_REASON_PART_FORECAST},
	{signal.PartChurn, barometerv1.ReasonPart_REASON_PART_CHURN},
	{signal.PartSurge, barometerv1.ReasonPart_REASON_PART_SURGE},
}

func partsToProto(ps signal.Parts) []barometerv1.ReasonPart {
	var out []barometerv1.ReasonPart
	for _, p := range reasonParts {
		if ps&p.part != 0 {
			out = append(out, p.proto)
		}
	}
	return out
}

func partsFromProto(ps []barometerv1.ReasonPart) signal.Parts {
	var out signal.Parts
	for _, x := range ps {
		for _, p := range reasonParts {
			if p.proto == x {
				out |= p.part
			}
		}
	}
	return out
}
