package trigger

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/policy"
	"github.com/barometer-scaler/barometer/pkg/pressure/sourcekind"
	"github.com/barometer-scaler/barometer/pkg/signal"
)

// kedaKeys are KEDA's own trigger keys: forwarded to every external scaler,
// meaningful only to KEDA.
var kedaKeys = []string{"scalerAddress", "enableTLS", "unsafeSsl"}

// KEDAKeys returns the keys KEDA itself reads, which a trigger may carry and
// the scaler ignores.
func KEDAKeys() []string { return slices.Clone(kedaKeys) }

// Schema is every key a trigger may carry: the keys every trigger has, the
// policies' keys, and the keys of each source kind it offers.
type Schema struct {
	kinds []sourcekind.Kind // sorted by name
}

// NewSchema returns the schema with the given source kinds.
func NewSchema(kinds ...sourcekind.Kind) *Schema {
	s := &Schema{kinds: slices.Clone(kinds)}
	slices.SortFunc(s.kinds, func(a, b sourcekind.Kind) int { return strings.Compare(a.Name, b.Name) })
	return s
}

// Kinds returns the source kinds, sorted by name.
func (s *Schema) Kinds() []sourcekind.Kind { return s.kinds }

func (s *Schema) kind(name string) (sourcekind.Kind, bool) {
	for _, k := range s.kinds {
		if k.Name == name {
			return k, true
		}
	}
	return sourcekind.Kind{}, false
}

func (s *Schema) kindNames() []string {
	out := make([]string, len(s.kinds))
	for i, k := range s.kinds {
		out[i] = k.Name
	}
	return out
}

// Parse reads the scaler's own trigger metadata (its default target's),
// which belongs to no namespace.
func (s *Schema) Parse(raw map[string]string, defaultInterval time.Duration) (*Trigger, error) {
	return s.ParseIn("", raw, defaultInterval)
}

// ParseIn reads the scalerMetadata of a trigger of a ScaledObject in
// namespace. Every error is a *keyschema.MetadataError naming the key as
// the trigger spelled it.
func (s *Schema) ParseIn(namespace string, raw map[string]string, defaultInterval time.Duration) (*Trigger, error) {
	r, err := keyschema.NewReading(raw, kedaKeys, keyschema.Context{DefaultInterval: defaultInterval, Namespace: namespace})
	if err != nil {
		return nil, err
	}
	t, err := s.parse(r)
	if err != nil {
		return nil, r.Spelled(err)
	}
	return t, nil
}

func (s *Schema) parse(r *keyschema.Reading) (*Trigger, error) {
	if r.Context.Namespace != "" && !r.IsSet("source") {
		return nil, s.sourceRequired()
	}
	t := &Trigger{Spec: &Spec{Signal: signal.DefaultOptions()}}
	texts, err := keyschema.Apply(r, commonKeys(s), commonChecks, t)
	if err != nil {
		return nil, err
	}
	r.Context.Interval = t.Interval
	var policyTexts []string
	if k := t.Policy.Kind; k.Name != "" {
		if t.Policy.Options, policyTexts, err = k.Parse(r); err != nil {
			return nil, err
		}
	}
	kind, _ := s.kind(t.SourceKind) // the source key's Enum admitted only known kinds
	spec, sourceTexts, err := kind.Parse(r)
	if err != nil {
		return nil, err
	}
	if err := r.Unknown(s.readers); err != nil {
		return nil, err
	}
	t.Source, t.sourceKey = spec, spec.Key()
	finish(t)
	h := fnv.New64a()
	for _, x := range slices.Concat([]string{t.sourceKey}, texts, policyTexts, sourceTexts) {
		h.Write([]byte(x))
		h.Write([]byte{0})
	}
	// What the read-side target changes in the signal's options splits
	// the sampler too.
	fmt.Fprintf(h, "floorTarget=%g surgeTarget=%g", t.Signal.FloorTarget, t.Signal.SurgeTarget)
	t.identity = fmt.Sprintf("%s@%016x", t.SourceKind, h.Sum64())
	t.shortID = t.identity[:len(t.SourceKind)+9]
	t.poolKey = poolKey(t, policyTexts)
	return t, nil
}

// sourceRequired refuses a ScaledObject's trigger that names no source:
// the default, the scaler's own machine, would scale the workload on the
// scaler's load. Only the scaler's own default target takes it unnamed.
func (s *Schema) sourceRequired() error {
	kinds := make([]string, len(s.kinds))
	for i, k := range s.kinds {
		kinds[i] = fmt.Sprintf("%s (%s)", k.Name, k.Doc)
	}
	return &keyschema.MetadataError{Key: "source", Allowed: "required in a ScaledObject's trigger, naming where its pressure comes from: " + strings.Join(kinds, "; ")}
}

// readers names the source kinds and replica policies that read key, for
// an error on a key this trigger does not read.
func (s *Schema) readers(key string) (sources, policies []string) {
	has := func(keys []keyschema.Info) bool {
		return slices.ContainsFunc(keys, func(i keyschema.Info) bool { return i.Name == key })
	}
	for _, kind := range s.kinds {
		if has(kind.Keys()) {
			sources = append(sources, kind.Name)
		}
	}
	for _, kind := range policy.Kinds() {
		if has(kind.Keys()) {
			policies = append(policies, kind.Name)
		}
	}
	return sources, policies
}
