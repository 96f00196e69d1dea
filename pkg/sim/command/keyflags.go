package command

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/pressure/host"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// keyFlags are the simulator's flags for trigger keys: one per key whose
// declaration says the simulator reads it (keyschema.Info.Simulated),
// named as the key spelt as a flag (scaleInGateWindow:
// --scale-in-gate-window), documented and parsed by the trigger schema
// exactly as a ScaledObject's metadata is. Nothing here lists a key: a key
// declared with InSimulator in pkg/trigger is a flag here. The keys the
// model decides itself (replica bounds, slots, classes, pools, price) and
// those only the surfaces read are declared without it.
type keyFlags struct {
	schema *trigger.Schema
	keys   map[string]keyschema.Info // flag name -> key
	values map[string]string         // key -> the value given
}

func defineKeyFlags(fs *flag.FlagSet) *keyFlags {
	// The source kinds do not matter: no source key is simulated.
	k := &keyFlags{schema: trigger.NewSchema(host.Kind()), keys: map[string]keyschema.Info{}, values: map[string]string{}}
	for _, info := range k.schema.Keys() {
		if !info.Simulated {
			continue
		}
		name := flagName(info.Name)
		k.keys[name] = info
		usage := fmt.Sprintf("%s: %s; %s (default %s)", strings.Join(controllersOf(info), ", "), info.Doc, info.Allowed, info.Default)
		fs.Var(keyValue{k, info}, name, strings.ReplaceAll(usage, "`", ""))
	}
	return k
}

// keyValue is one key's flag; a true/false key is a boolean flag.
type keyValue struct {
	k    *keyFlags
	info keyschema.Info
}

func (v keyValue) String() string { return "" }
func (v keyValue) Set(s string) error {
	v.k.values[v.info.Name] = s
	return nil
}
func (v keyValue) IsBoolFlag() bool { return v.info.Type == keyschema.TypeBool }

// flagName spells a key as a flag: words lower case, joined by '-'; a run
// of capitals is one word (launchTTL: launch-ttl).
func flagName(key string) string {
	var b strings.Builder
	rs := []rune(key)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 && (!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// controllersOf names the controllers that read a key: the pressure
// signal's keys are the barometer controller's, a policy's the policy's.
func controllersOf(info keyschema.Info) []string {
	out := make([]string, len(info.Policies))
	for i, p := range info.Policies {
		out[i] = p
		if p == signal.PolicyPressure {
			out[i] = controllerBarometer
		}
	}
	return out
}

// inCompare reports whether --compare applies a key: it runs Barometer
// once per profile, with every signal key but the profile's, and the
// policies with their launch TTL; every other controller with its
// defaults.
func inCompare(info keyschema.Info) bool {
	if info.Name == trigger.KeyProfile {
		return false
	}
	return slices.Contains(info.Policies, signal.PolicyPressure) || info.Name == trigger.KeyLaunchTTL
}

// check refuses a key flag set for a controller that does not read it, or
// with --compare when --compare does not apply it.
func (k *keyFlags) check(set map[string]bool, controller string, compare bool) error {
	for _, name := range slices.Sorted(maps.Keys(k.keys)) {
		info := k.keys[name]
		cs := controllersOf(info)
		switch {
		case !set[name]:
		case compare && !inCompare(info):
			return errNotInCompare(name)
		case !compare && !slices.Contains(cs, controller):
			return fmt.Errorf("--%s applies to --controller %s (this run: %s)", name, strings.Join(cs, ", "), controller)
		}
	}
	return nil
}

// isSet reports whether the flag of key was given.
func (k *keyFlags) isSet(key string) bool {
	_, ok := k.values[key]
	return ok
}

// trigger parses the flags given for policyName, with extra keys, as the
// scaler parses a trigger; an invalid value is reported against its flag.
func (k *keyFlags) trigger(policyName string, extra map[string]string) (*trigger.Trigger, error) {
	raw := map[string]string{trigger.KeyPolicy: policyName}
	for key, v := range k.values {
		if slices.Contains(k.keys[flagName(key)].Policies, policyName) {
			raw[key] = v
		}
	}
	maps.Copy(raw, extra)
	t, err := k.schema.Parse(raw, trigger.MinInterval)
	var me *keyschema.MetadataError
	if errors.As(err, &me) {
		name := flagName(me.Key)
		if me.Value == "" {
			return nil, fmt.Errorf("--%s (allowed: %s)", name, me.Allowed)
		}
		return nil, fmt.Errorf("--%s %s (allowed: %s)", name, me.Value, me.Allowed)
	}
	return t, err
}
