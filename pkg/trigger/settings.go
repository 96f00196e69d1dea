package trigger

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/trigger/keyschema"
)

// Setting is one key of a parsed trigger: the value in force and where it
// came from (keyschema.OriginMetadata, OriginProfile or OriginDefault).
type Setting = keyschema.Setting

// Settings parses the scalerMetadata of a trigger of a ScaledObject in
// namespace, as ParseIn does, and returns every key that applies to it, in
// the order they are read, with its value in force and its origin. It is
// for people (the status page) and parses anew each time.
func (s *Schema) Settings(namespace string, raw map[string]string, defaultInterval time.Duration) ([]Setting, error) {
	r, err := keyschema.NewReading(raw, kedaKeys, keyschema.Context{DefaultInterval: defaultInterval, Namespace: namespace})
	if err != nil {
		return nil, err
	}
	r.RecordSettings()
	if _, err := s.parse(r); err != nil {
		return nil, r.Spelled(err)
	}
	return r.Settings(), nil
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
