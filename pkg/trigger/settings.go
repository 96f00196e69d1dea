package trigger

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Setting is one key of a parsed trigger: the value in force and where it
// came from.
type Setting struct {
	Key string
	// Value is the value's canonical text, or for a key whose value may
	// hold a credential (ShowAs) the text it is shown as.
	Value string
	// Origin is OriginMetadata, OriginProfile or OriginDefault.
	Origin string
}

// Where a Setting's value came from.
const (
	// OriginMetadata: the trigger set the key (or KEDA resolved its
	// xFromEnv spelling).
	OriginMetadata = "metadata"
	// OriginProfile: the pressure signal's profile (the profile key).
	OriginProfile = "profile"
	// OriginDefault: the key's default, or the scaler's
	// (sampleInterval's BAROMETER_SAMPLE_INTERVAL).
	OriginDefault = "default"
)

// Settings parses the scalerMetadata of a trigger of a ScaledObject in
// namespace, as ParseIn does, and returns every key that applies to it, in
// the order they are read, with its value in force and its origin. It is
// for people (the status page) and parses anew each time.
func (s *Schema) Settings(namespace string, raw map[string]string, defaultInterval time.Duration) ([]Setting, error) {
	if err := withinBounds(raw); err != nil {
		return nil, err
	}
	st := newState(raw, s, Context{DefaultInterval: defaultInterval, Namespace: namespace})
	st.settings = []Setting{}
	if _, err := s.parse(st); err != nil {
		return nil, st.spelled(err)
	}
	return st.settings, nil
}

// setting is the Setting of key k once its value is in dst.
func setting[S any](st *state, k Key[S], dst *S) Setting {
	out := Setting{Key: k.Name, Value: k.text(dst), Origin: OriginDefault}
	switch {
	case st.isSet(k.Name):
		out.Origin = OriginMetadata
	case k.fromProfile:
		out.Origin = OriginProfile
	}
	if k.shown != nil {
		out.Value = k.shown(dst)
	}
	return out
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
