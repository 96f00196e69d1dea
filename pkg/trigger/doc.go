// Package trigger is the metadata language of a ScaledObject's trigger:
// the keys every trigger reads (keys.go, keys_signal.go, keys_policy.go)
// beside the source kinds' and policy kinds' own, parsed once into an
// immutable Trigger. A Trigger is the sampled Spec, whose identity decides
// which ScaledObjects share a sampler, and the read-side keys each
// ScaledObject keeps for itself (Reader).
package trigger
