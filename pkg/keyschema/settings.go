package keyschema

// Setting is one key of a parsed set of metadata: the value in force and
// where it came from.
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
	// OriginMetadata: the metadata set the key (or KEDA resolved its
	// xFromEnv spelling).
	OriginMetadata = "metadata"
	// OriginProfile: a key read before it put the value in place (Preset:
	// the pressure signal's profile).
	OriginProfile = "profile"
	// OriginDefault: the key's default, or one computed from the context.
	OriginDefault = "default"
)

// RecordSettings makes every later Apply record the keys it reads, for
// Settings. It is for people (a status page): a parse that records pays
// for it, no other does.
func (r *Reading) RecordSettings() { r.settings = []Setting{} }

// Settings are the keys the Applies since RecordSettings read, in order.
func (r *Reading) Settings() []Setting { return r.settings }

// setting is the Setting of key k once its value is in dst.
func setting[S any](r *Reading, k Key[S], dst *S) Setting {
	out := Setting{Key: k.Name, Value: k.text(dst), Origin: OriginDefault}
	switch {
	case r.IsSet(k.Name):
		out.Origin = OriginMetadata
	case k.preset:
		out.Origin = OriginProfile
	}
	if k.shown != nil {
		out.Value = k.shown(dst)
	}
	return out
}
