// Package signal turns measured pressure into replica demand: the
// scaling-signal computer (dominant dimension x replicas, fast-attack /
// slow-release EWMA, the split-aware scale-in gate, the replica floor) and
// the Sampler that runs a source on a timer and publishes each result as an
// immutable snapshot.
//
// A target that applies a replica policy instead of the pressure signal
// plugs a Decider into its sampler (pkg/decide does), so the timer,
// the collectors, the snapshot and its staleness stay one code path.
//
// Everything here is deterministic: time is passed in (a Clock for the
// sampler, a time.Time for the computer), so tests drive it sample by sample.
// The storage axis is carried through untouched and never enters the demand.
package signal
