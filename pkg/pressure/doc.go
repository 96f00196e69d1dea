// Package pressure is what Barometer measures: the per-replica observations a
// source reports, the compute and storage pressure they fold into, and the
// collectors that do the folding.
//
// Data flows one way: a Source produces an Observation; the ComputeCollector
// and StorageCollector turn it into ComputePressure and StoragePressure; the
// signal package turns those into a scaling signal. Nothing here knows about
// smoothing, gates or serving.
package pressure
