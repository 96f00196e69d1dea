// Package signal turns measured pressure into replica demand: the
// scaling-signal computer (dominant dimension x replicas, fast-attack /
// slow-release EWMA, the split-aware scale-in gate, the replica floor) and
// the Sampler that runs a source on a timer and publishes each result as an
// immutable snapshot.
//
// Everything here is deterministic: time is passed in (a Clock for the
// sampler, a time.Time for the computer), so tests drive it sample by sample.
// The storage axis is carried through untouched and never enters the demand.
package signal
