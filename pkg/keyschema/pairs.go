package keyschema

import (
	"maps"
	"slices"
	"strings"
)

// ParsePairs reads "name=value,name2=value2" (KEDA's spelling of its maps),
// as a Text key's parse.
func ParsePairs(s string, _ *Context) (map[string]string, string, bool) {
	out := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, "name=value pairs separated by ','; " + Quote(strings.TrimSpace(part)) + " is not one", false
		}
		if _, dup := out[k]; dup {
			return nil, "each name once; " + Quote(k) + " is repeated", false
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, "", true
}

// PairsText is the canonical text of pairs: sorted by name.
func PairsText(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// PairNames shows pairs by their names only, for values that may hold a
// credential: "X-Team=…,Authorization=…".
func PairNames(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"=…")
	}
	return strings.Join(parts, ",")
}
