// Package target is where KEDA's ScaledObjects meet samplers: trigger
// metadata parsed once into a typed Metadata (every error names the key and
// what is allowed), the source kinds a server offers, and the Registry that
// starts one sampler per distinct configuration, shares it between
// ScaledObjects and stops it when nobody has read it for a while.
package target
