package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// modelKeys are the trigger keys the simulator's model decides itself
// (replica bounds from --min-replicas and --max-replicas, one replica per
// item, no SLO classes, reservations, pools or splits, no price), or that
// only the surfaces read: they get no flag.
var modelKeys = map[string]bool{
	"minReplicas": true, "maxReplicas": true, "slotsPerReplica": true, "sloClasses": true, "reservationHorizon": true,
	"pool": true, "costPerReplicaSecond": true, "floor": true, "splitAwareScaleIn": true, "targetPressure": true,
}

// keyFlags are the simulator's flags for trigger keys: one per key a
// simulated controller reads, named as the key spelt as a flag
// (scaleInGateWindow: --scale-in-gate-window), documented and parsed by the
// trigger schema exactly as a ScaledObject's metadata is. Nothing here
// lists a key: a key declared in pkg/trigger is a flag here.
type keyFlags struct {
	schema *trigger.Schema
	keys   map[string]trigger.Info // flag name -> key
	values map[string]string       // key -> the value given
}

func defineKeyFlags(fs *flag.FlagSet) *keyFlags {
	k := &keyFlags{schema: newSchema(allow.Default(), nil, trigger.Kube{}, nil), keys: map[string]trigger.Info{}, values: map[string]string{}}
	for _, info := range k.schema.Keys() {
		if info.Policies == nil || len(info.Sources) > 0 || modelKeys[info.Name] {
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
	info trigger.Info
}

func (v keyValue) String() string { return "" }
func (v keyValue) Set(s string) error {
	v.k.values[v.info.Name] = s
	return nil
}
func (v keyValue) IsBoolFlag() bool { return v.info.Allowed == "true or false" }

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
func controllersOf(info trigger.Info) []string {
	out := make([]string, len(info.Policies))
	for i, p := range info.Policies {
		out[i] = p
		if p == signal.PolicyPressure {
			out[i] = "barometer"
		}
	}
	return out
}

// flags returns the key flags, sorted.
func (k *keyFlags) flags() []string { return slices.Sorted(maps.Keys(k.keys)) }

// check refuses a key flag set for a controller that does not read it.
func (k *keyFlags) check(set map[string]bool, controller string, compare bool) error {
	for _, name := range k.flags() {
		cs := controllersOf(k.keys[name])
		if set[name] && !compare && !slices.Contains(cs, controller) {
			return fmt.Errorf("--%s applies to --controller %s (this run: %s)", name, strings.Join(cs, ", "), controller)
		}
	}
	return nil
}

// trigger parses the flags given for policyName, with extra keys, as the
// scaler parses a trigger; an invalid value is reported against its flag.
func (k *keyFlags) trigger(policyName string, extra map[string]string) (*trigger.Trigger, error) {
	raw := map[string]string{"policy": policyName}
	for key, v := range k.values {
		if slices.Contains(k.schemaInfo(key).Policies, policyName) {
			raw[key] = v
		}
	}
	maps.Copy(raw, extra)
	t, err := k.schema.Parse(raw, trigger.MinInterval)
	var me *trigger.MetadataError
	if errors.As(err, &me) {
		name := flagName(me.Key)
		if me.Value == "" {
			return nil, fmt.Errorf("--%s (allowed: %s)", name, me.Allowed)
		}
		return nil, fmt.Errorf("--%s %s (allowed: %s)", name, me.Value, me.Allowed)
	}
	return t, err
}

func (k *keyFlags) schemaInfo(key string) trigger.Info { return k.keys[flagName(key)] }
