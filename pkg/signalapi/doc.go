// Package signalapi serves barometer.v1.SignalService, Barometer's own read
// API: the full ScalingSignal of a target, once (Get) or as a stream (Watch),
// for dashboards and other controllers. It reads the targets the KEDA scaler
// starts and never starts one itself, so it cannot keep a sampler alive that
// KEDA no longer uses.
package signalapi
