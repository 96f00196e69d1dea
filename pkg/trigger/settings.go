package trigger

import (
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
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
