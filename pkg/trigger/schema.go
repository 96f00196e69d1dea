package trigger

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/barometer-scaler/barometer/pkg/signal"
)

// kedaKeys are KEDA's own trigger keys: forwarded to every external scaler,
// meaningful only to KEDA.
var kedaKeys = []string{"scalerAddress", "enableTLS", "unsafeSsl"}

// KEDAKeys returns the keys KEDA itself reads, which a trigger may carry and
// the scaler ignores.
func KEDAKeys() []string { return slices.Clone(kedaKeys) }

// Check is a rule between keys, run once every key has its value: set
// reports whether the trigger set a key (rather than taking its default).
type Check[S any] func(dst *S, c *Context, set func(key string) bool) error

// Kind is a source kind: its name, its own keys and how its configuration
// becomes a SourceSpec. Declare one with NewKind.
type Kind struct {
	Name string
	Doc  string
	keys []Info
	// parse reads the kind's keys from st, checks them and builds the
	// spec; texts are the canonical values of its sampled keys.
	parse func(st *state) (spec SourceSpec, texts []string, err error)
}

// Keys describes the kind's own keys.
func (k Kind) Keys() []Info { return k.keys }

// NewKind declares a source kind whose configuration is a C: zero is its
// starting value, keys fill it, checks relate its keys, and build turns it
// into the spec the registry starts.
func NewKind[C any](name, doc string, zero func() C, keys []Key[C], checks []Check[C], build func(C) (SourceSpec, error)) Kind {
	infos := make([]Info, len(keys))
	for i, k := range keys {
		infos[i] = k.Info
		infos[i].Sources = []string{name}
	}
	return Kind{Name: name, Doc: doc, keys: infos, parse: func(st *state) (SourceSpec, []string, error) {
		cfg := zero()
		texts, err := apply(st, keys, &cfg)
		if err != nil {
			return nil, nil, err
		}
		for _, check := range checks {
			if err := check(&cfg, &st.ctx, st.isSet); err != nil {
				return nil, nil, err
			}
		}
		spec, err := build(cfg)
		return spec, texts, err
	}}
}

// Schema is every key a trigger may carry: the keys every trigger has, the
// policies' keys, and the keys of each source kind it offers.
type Schema struct {
	kinds []Kind // sorted by name
}

// NewSchema returns the schema with the given source kinds.
func NewSchema(kinds ...Kind) *Schema {
	s := &Schema{kinds: slices.Clone(kinds)}
	slices.SortFunc(s.kinds, func(a, b Kind) int { return strings.Compare(a.Name, b.Name) })
	return s
}

// Kinds returns the source kinds, sorted by name.
func (s *Schema) Kinds() []Kind { return s.kinds }

func (s *Schema) kind(name string) (Kind, bool) {
	for _, k := range s.kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
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
// namespace. Every error is a *MetadataError naming the key as the trigger
// spelled it.
func (s *Schema) ParseIn(namespace string, raw map[string]string, defaultInterval time.Duration) (*Trigger, error) {
	if err := withinBounds(raw); err != nil {
		return nil, err
	}
	st := newState(raw, s, Context{DefaultInterval: defaultInterval, Namespace: namespace})
	t, err := s.parse(st)
	if err != nil {
		return nil, st.spelled(err)
	}
	return t, nil
}

func (s *Schema) parse(st *state) (*Trigger, error) {
	t := &Trigger{Signal: signal.DefaultOptions()}
	texts, err := apply(st, commonKeys(s), t)
	if err != nil {
		return nil, err
	}
	for _, check := range commonChecks {
		if err := check(t, &st.ctx, st.isSet); err != nil {
			return nil, err
		}
	}
	st.ctx.Interval = t.Interval
	kind, _ := s.kind(t.SourceKind) // the source key's Enum admitted only known kinds
	spec, sourceTexts, err := kind.parse(st)
	if err != nil {
		return nil, err
	}
	if err := st.unknown(); err != nil {
		return nil, err
	}
	t.Source, t.sourceKey = spec, spec.Key()
	finish(t)
	h := fnv.New64a()
	for _, x := range append(texts, sourceTexts...) {
		h.Write([]byte(x))
		h.Write([]byte{0})
	}
	// What the read-side target changes in the signal's options splits
	// the sampler too.
	fmt.Fprintf(h, "floorTarget=%g surgeTarget=%g", t.Signal.FloorTarget, t.Signal.SurgeTarget)
	t.identity = fmt.Sprintf("%s@%016x", t.sourceKey, h.Sum64())
	t.poolKey = poolKey(st, t)
	return t, nil
}

// The bounds of one trigger's metadata: far above any real trigger (a
// thousand scrape URLs are about 100 KiB), far below what could hurt.
const (
	MaxKeys          = 256
	MaxMetadataBytes = 256 << 10
)

// withinBounds refuses metadata too large to be a trigger, before any of it is
// read.
func withinBounds(raw map[string]string) error {
	if len(raw) > MaxKeys {
		return &MetadataError{Key: "scalerMetadata", Allowed: fmt.Sprintf("at most %d keys; this trigger has %d", MaxKeys, len(raw))}
	}
	n := 0
	for k, v := range raw {
		n += len(k) + len(v)
	}
	if n > MaxMetadataBytes {
		return &MetadataError{Key: "scalerMetadata", Allowed: fmt.Sprintf("at most %d bytes of keys and values; this trigger has %d", MaxMetadataBytes, n)}
	}
	return nil
}

// state is one Parse: the trigger's values by key, and which were read.
type state struct {
	schema   *Schema
	ctx      Context
	values   map[string]string // base key -> trimmed value, non-empty only
	from     map[string]string // base key -> the xFromEnv key it arrived as
	used     map[string]bool
	conflict error
	settings []Setting // non-nil: Settings records every key read
}

// newState reads raw. KEDA forwards a key ending in FromEnv under that same
// name with the environment variable's resolved value (and drops it when
// the variable does not resolve), so `targetPressureFromEnv` is read as
// `targetPressure`; errors still name the key the way the trigger spelled
// it.
func newState(raw map[string]string, s *Schema, c Context) *state {
	st := &state{schema: s, ctx: c, values: make(map[string]string, len(raw)), from: map[string]string{}, used: map[string]bool{}}
	for _, k := range kedaKeys {
		st.used[k] = true
	}
	for k, v := range raw {
		base, fromEnv := strings.CutSuffix(k, "FromEnv")
		if fromEnv && base != "" {
			if _, both := raw[base]; both {
				// Quoted: the key is the caller's, of any length and bytes.
				st.conflict = &MetadataError{Key: k, Allowed: fmt.Sprintf("set either %s or %s, not both", Quote(base), Quote(k))}
				continue
			}
			st.from[base] = k
		} else {
			base = k
		}
		if v = strings.TrimSpace(v); v != "" {
			st.values[base] = v
		} else if _, ok := st.values[base]; !ok {
			st.values[base] = "" // present but empty: unset, yet not unknown
		}
	}
	return st
}

func (st *state) isSet(key string) bool { return st.values[key] != "" }

// spelled rewrites a *MetadataError about a key that arrived as xFromEnv to
// name xFromEnv, the key the trigger author wrote.
func (st *state) spelled(err error) error {
	var me *MetadataError
	if errors.As(err, &me) {
		if k, ok := st.from[me.Key]; ok {
			out := *me
			out.Key = k
			return &out
		}
	}
	return err
}

// applies reports whether a key is read under the trigger's policy; when
// not, the error says which policies read it.
func (st *state) applies(info Info) bool {
	return info.Policies == nil || slices.Contains(info.Policies, st.ctx.Policy)
}

// apply reads keys into dst in order, defaulting those unset; it returns
// the canonical texts of the sampled keys that apply.
func apply[S any](st *state, keys []Key[S], dst *S) ([]string, error) {
	var texts []string
	for _, k := range keys {
		st.used[k.Name] = true
		v := st.values[k.Name]
		if !st.applies(k.Info) {
			if v != "" {
				return nil, &MetadataError{Key: k.Name, Value: v, Allowed: fmt.Sprintf("only for %s (this trigger's policy is %s)", policiesText(k.Policies), st.ctx.Policy)}
			}
			continue
		}
		switch {
		case v != "":
			if allowed, ok := k.read(dst, v, &st.ctx); !ok {
				return nil, &MetadataError{Key: k.Name, Value: v, Allowed: allowed}
			}
		case k.Required:
			return nil, &MetadataError{Key: k.Name, Allowed: "required" + forSource(k.Info) + ": " + k.Doc}
		case k.reset != nil:
			k.reset(dst, &st.ctx)
		}
		if k.then != nil {
			k.then(dst, &st.ctx)
		}
		if k.Scope == Sampled {
			texts = append(texts, k.Name+"="+k.text(dst))
		}
		if st.settings != nil {
			st.settings = append(st.settings, setting(st, k, dst))
		}
		switch k.Name {
		case keySource:
			st.ctx.Source = k.text(dst)
		case keyPolicy:
			st.ctx.Policy = k.text(dst)
		}
	}
	return texts, nil
}

func forSource(info Info) string {
	if len(info.Sources) == 1 {
		return " for source " + info.Sources[0]
	}
	return ""
}

func policiesText(ps []string) string {
	if len(ps) == 1 {
		return "policy " + ps[0]
	}
	return "policies " + strings.Join(ps, ", ")
}

// unknown reports a key set twice (x and xFromEnv), or the first key (in
// sorted order) that nothing read: another source kind's key by what reads
// it, anything else with the keys this trigger may carry.
func (st *state) unknown() error {
	if st.conflict != nil {
		return st.conflict
	}
	var left []string
	for k := range st.values {
		if !st.used[k] {
			left = append(left, k)
		}
	}
	if len(left) == 0 {
		return nil
	}
	slices.Sort(left)
	key := left[0]
	var readers []string
	for _, kind := range st.schema.kinds {
		if slices.ContainsFunc(kind.keys, func(i Info) bool { return i.Name == key }) {
			readers = append(readers, kind.Name)
		}
	}
	if len(readers) > 0 {
		what := "source " + strings.Join(readers, ", ")
		if len(readers) > 1 {
			what = "sources " + strings.Join(readers, ", ")
		}
		return &MetadataError{Key: cmp.Or(st.from[key], key), Allowed: fmt.Sprintf("only for %s (this trigger's source is %s)", what, st.ctx.Source)}
	}
	known := make([]string, 0, len(st.used))
	for k := range st.used {
		known = append(known, k)
	}
	slices.Sort(known)
	return &MetadataError{Key: cmp.Or(st.from[key], key), Allowed: "unknown key; allowed keys: " + strings.Join(known, ", ")}
}
