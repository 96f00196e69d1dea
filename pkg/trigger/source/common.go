package source

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/pressure/connprofile"
	"github.com/barometer-scaler/barometer/pkg/pressure/exposition"
	"github.com/barometer-scaler/barometer/pkg/trigger/keyschema"
)

// metricNameKeys are the keys that rename the exposition contract's
// metrics, one per name, for a source configuration C whose names names
// returns; valid says which names the source can read.
func metricNameKeys[C any](names func(*C) *exposition.Names, allowed string, valid func(string) bool) []keyschema.Key[C] {
	def := exposition.DefaultNames()
	overrides := def.Overrides()
	keys := make([]keyschema.Key[C], len(overrides))
	// One group for every source that reads the names (the table lists
	// a shared key once), so its text says what each source takes.
	group := keyschema.Group{Name: "metric names", Doc: "rename the contract's metrics, one key per metric (see docs/exposition.md); a Prometheus metric name for the prometheus source, any valid UTF-8 name of at most 200 bytes for the others"}
	for i, o := range overrides {
		field := func(c *C) *string { return names(c).Overrides()[i].Name }
		keys[i] = keyschema.String(o.Key, field, *o.Name, allowed, func(s string, _ *keyschema.Context) bool { return valid(s) }).
			Describe("renames the contract's `" + *o.Name + "`").Documented("the contract's names").InGroup(group)
	}
	return keys
}

// The names of the source keys that the checks between keys refer to.
const (
	keyCPULimitCores   = "cpuLimitCores"
	keyServerAddress   = "serverAddress"
	keyQueryParameters = "queryParameters"
	keyCustomHeaders   = "customHeaders"
	keyVictimHints     = "victimHints"
)

// cpuLimitCoresKey is the CPU limit of replicas that expose none, read by
// the scrape and prometheus sources alike.
func cpuLimitCoresKey[C any](f keyschema.Field[C, float64]) keyschema.Key[C] {
	return keyschema.Float(keyCPULimitCores, f, 0, keyschema.Between(0, 1e4)).
		Describe("CPU limit for replicas that do not expose `barometer_cpu_limit_cores` (or expose 0)")
}

// connectionProfileKey names the connection profile (held by the scaler,
// never in the ScaledObject) a source reaches its addresses through.
func connectionProfileKey[C any](f keyschema.Field[C, string]) keyschema.Key[C] {
	return keyschema.String("connectionProfile", f, "",
		"a profile name: lower-case letters, digits, '.', '_' and '-', at most 63 bytes",
		func(s string, _ *keyschema.Context) bool { return len(s) <= 63 && profileNamePattern.MatchString(s) }).Documented("(none)").
		Describe("the connection profile (credentials, TLS, tenant; BAROMETER_CONNECTION_PROFILES) to reach the addresses through; without it, a profile whose url matches applies")
}

var profileNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)

// profileError turns a connection profile's refusal into the error on the
// key it names.
func profileError(err error) error {
	var pe *connprofile.Error
	if errors.As(err, &pe) {
		allowed := pe.Reason
		if pe.Profile != "" {
			allowed = "connection profile " + keyschema.Quote(pe.Profile) + ": " + pe.Reason
		}
		return &keyschema.MetadataError{Key: pe.Key, Allowed: allowed}
	}
	return err
}

// parsePairs reads "name=value,name2=value2" (KEDA's spelling of its maps).
func parsePairs(s string, _ *keyschema.Context) (map[string]string, string, bool) {
	out := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, "name=value pairs separated by ','; " + keyschema.Quote(strings.TrimSpace(part)) + " is not one", false
		}
		if _, dup := out[k]; dup {
			return nil, "each name once; " + keyschema.Quote(k) + " is repeated", false
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, "", true
}

func pairsText(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// pairNames shows name=value pairs by their names only, for values that may
// hold a credential: "X-Team=…,Authorization=…".
func pairNames(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"=…")
	}
	return strings.Join(parts, ",")
}
