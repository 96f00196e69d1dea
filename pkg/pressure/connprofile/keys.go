package connprofile

import (
	"errors"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
)

// Key declares connectionProfile: the profile (held by the scaler, never
// in the ScaledObject) a source reaches its addresses through.
func Key[C any](f keyschema.Field[C, string]) keyschema.Key[C] {
	return keyschema.String("connectionProfile", f, "",
		"a profile name: lower-case letters, digits, '.', '_' and '-', at most 63 bytes",
		func(s string, _ *keyschema.Context) bool { return namePattern.MatchString(s) }).Documented("(none)").
		Describe("the connection profile (credentials, TLS, tenant; BAROMETER_CONNECTION_PROFILES) to reach the addresses through; without it, a profile whose url matches applies")
}

// MetadataError turns a profile's refusal into the error on the key it
// names; other errors pass through.
func MetadataError(err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		allowed := pe.Reason
		if pe.Profile != "" {
			allowed = "connection profile " + keyschema.Quote(pe.Profile) + ": " + pe.Reason
		}
		return &keyschema.MetadataError{Key: pe.Key, Allowed: allowed}
	}
	return err
}
