package exposition

import "github.com/barometer-scaler/barometer/pkg/keyschema"

// NameKeys declares the keys that rename the contract's metrics, one per
// name, for a source configuration C whose names names returns; valid says
// which names the source can read.
func NameKeys[C any](names func(*C) *Names, allowed string, valid func(string) bool) []keyschema.Key[C] {
	def := DefaultNames()
	overrides := def.Overrides()
	keys := make([]keyschema.Key[C], len(overrides))
	// One group for every source that reads the names, so the README's
	// table lists a shared key once.
	group := keyschema.Group{Name: "metric names", Doc: "rename the contract's metrics, one key per metric (see docs/exposition.md); a Prometheus metric name for the prometheus source, any valid UTF-8 name of at most 200 bytes for the others"}
	for i, o := range overrides {
		field := func(c *C) *string { return names(c).Overrides()[i].Name }
		keys[i] = keyschema.String(o.Key, field, *o.Name, allowed, func(s string, _ *keyschema.Context) bool { return valid(s) }).
			Describe("renames the contract's `" + *o.Name + "`").Documented("the contract's names").InGroup(group)
	}
	return keys
}

// CheckUniqueNames refuses two keys that name the same metric, which can
// only be a mistake. The run duration is also read as its _sum and _count
// series, which no other key may name either.
func CheckUniqueNames(names Names) error {
	used := map[string]string{}
	for _, o := range names.Overrides() {
		if k, dup := used[*o.Name]; dup {
			return &keyschema.MetadataError{Key: o.Key, Value: *o.Name, Allowed: "a metric no other key names; " + k + " already names it"}
		}
		used[*o.Name] = o.Key
	}
	for _, suffix := range []string{SumSuffix, CountSuffix} {
		if k, dup := used[names.QueueRunDuration+suffix]; dup {
			return &keyschema.MetadataError{Key: k, Value: names.QueueRunDuration + suffix,
				Allowed: "a metric no other key names; queueRunDurationMetric reads it as its " + suffix + " series"}
		}
	}
	return nil
}
