// Package signal turns measured pressure into replica demand: the
// scaling-signal computer (dominant dimension x replicas, fast-attack /
// slow-release EWMA, the split-aware scale-in gate, the compensation for
// stale data, the replica floor), its options and profiles.
//
// The computer is a pure value: Compute(now, input) folds one sample and
// returns the signal, and all its state between samples is in the Computer.
// Time is passed in, so tests drive it sample by sample. What runs it on a
// timer (pkg/sampling) and what decides with it (pkg/decide) sit above;
// this package imports neither. The storage axis is carried through
// untouched and never enters the demand.
package signal
