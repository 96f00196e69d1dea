package trigger

import (
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/policy/ledger"
)

// ledgerKeys are the keys of the bookkeeping pkg/decide does around the
// decisions (cost, and every replica policy's launch tracking and pools);
// each policy's own keys are its kind's (policy.Kind).
func ledgerKeys() []keyschema.Key[Trigger] {
	return []keyschema.Key[Trigger]{
		keyschema.Float("costPerReplicaSecond", func(t *Trigger) *float64 { return &t.Policy.CostPerReplicaSecond }, 0, keyschema.AtLeast(0)).
			Describe("price of one replica for one second"),
		keyschema.Duration("launchTTL", func(t *Trigger) *time.Duration { return &t.Policy.LaunchTTL }, ledger.DefaultLaunchTTL, 0, day, true).
			For(replicaPolicies()...).InSimulator().
			Describe("how long a scale-up counts as in flight and a scale-down as leaving; set it above start-up + metric delay + one sample"),
		keyschema.String("pool", func(t *Trigger) *string { return &t.Policy.Pool }, "",
			"a name of letters, digits, '-', '.', '_' and '/', starting and ending with a letter or digit, at most 200 bytes",
			func(s string, _ *keyschema.Context) bool { return len(s) <= 200 && poolNamePattern.MatchString(s) }).
			For(poolablePolicies()...).Documented("(none)").
			Describe("decide together with the targets of the same pool"),
	}
}

// replicaPolicies and poolablePolicies name the kinds a ledger key applies
// to.
func replicaPolicies() []string { return policy.Names() }

func poolablePolicies() []string {
	var out []string
	for _, k := range policy.Kinds() {
		if k.Poolable {
			out = append(out, k.Name)
		}
	}
	return out
}

// startPolicy records the chosen policy, so that the keys after it apply
// by it.
func startPolicy(t *Trigger, c *keyschema.Context) {
	c.Policy = t.Policy.Name
	t.Policy.Kind, _ = policy.KindNamed(t.Policy.Name)
	t.Policy.LaunchTTL = ledger.DefaultLaunchTTL
}
