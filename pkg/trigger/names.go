package trigger

import (
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
)

// metricNameKeys are the keys that rename the exposition contract's
// metrics, one per name, for a source configuration C whose names names
// returns; valid says which names the source can read.
func metricNameKeys[C any](names func(*C) *exposition.Names, allowed string, valid func(string) bool) []Key[C] {
	def := exposition.DefaultNames()
	overrides := def.Overrides()
	keys := make([]Key[C], len(overrides))
	for i, o := range overrides {
		field := func(c *C) *string { return names(c).Overrides()[i].Name }
		keys[i] = String(o.Key, field, *o.Name, allowed, func(s string, _ *Context) bool { return valid(s) }).
			Describe("renames the contract's `" + *o.Name + "`").Documented("the contract's names")
		keys[i].Info.Group = "metric names"
	}
	return keys
}

// cpuLimitCoresKey is the CPU limit of replicas that expose none, read by
// the scrape and prometheus sources alike.
func cpuLimitCoresKey[C any](f Field[C, float64]) Key[C] {
	return Float("cpuLimitCores", f, 0, Between(0, 1e4)).
		Describe("CPU limit for replicas that do not expose `barometer_cpu_limit_cores` (or expose 0)")
}
