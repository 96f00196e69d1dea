// Package sampling is the runtime of one target: a Sampler asks its
// source on a timer, folds the observation through the collectors, the
// split probe and the start-up clock, hands it to its decide.Decider and
// publishes the result as an immutable Snapshot that every surface reads
// with one atomic load. It keeps the target's history for the status page.
package sampling
