package keyschema

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Check is a rule between keys, run once every key has its value: set
// reports whether the metadata set a key (rather than taking its default).
type Check[S any] func(dst *S, c *Context, set func(key string) bool) error

// The bounds of one set of metadata: far above any real trigger (a
// thousand scrape URLs are about 100 KiB), far below what could hurt.
const (
	MaxKeys          = 256
	MaxMetadataBytes = 256 << 10
)

// Reading is one parse of raw metadata: its values by key, which keys were
// read, and the context the keys read so far have set.
type Reading struct {
	Context Context
	values  map[string]string // base key -> trimmed value, non-empty only
	from    map[string]string // base key -> the xFromEnv key it arrived as
	used    map[string]bool
	// elsewhere are the policies of keys declared but not read under this
	// trigger's policy, for Unknown to name.
	elsewhere map[string][]string
	conflict  error
	settings  []Setting // non-nil: Apply records every key it reads
}

// NewReading starts reading raw, refusing metadata too large to be a trigger
// before any of it is read. ignored are keys someone else reads (KEDA's
// own), which are never unknown.
//
// KEDA forwards a key ending in FromEnv under that same name with the
// environment variable's resolved value (and drops it when the variable
// does not resolve), so `targetPressureFromEnv` is read as
// `targetPressure`; errors still name the key the way the metadata spelled
// it (Spelled).
func NewReading(raw map[string]string, ignored []string, c Context) (*Reading, error) {
	if err := withinBounds(raw); err != nil {
		return nil, err
	}
	r := &Reading{Context: c, values: make(map[string]string, len(raw)), from: map[string]string{}, used: map[string]bool{}}
	for _, k := range ignored {
		r.used[k] = true
	}
	for k, v := range raw {
		base, fromEnv := strings.CutSuffix(k, "FromEnv")
		if fromEnv && base != "" {
			if _, both := raw[base]; both {
				// Quoted: the key is the caller's, of any length and bytes.
				r.conflict = &MetadataError{Key: k, Allowed: fmt.Sprintf("set either %s or %s, not both", Quote(base), Quote(k))}
				continue
			}
			r.from[base] = k
		} else {
			base = k
		}
		if v = strings.TrimSpace(v); v != "" {
			r.values[base] = v
		} else if _, ok := r.values[base]; !ok {
			r.values[base] = "" // present but empty: unset, yet not unknown
		}
	}
	return r, nil
}

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

// IsSet reports whether the metadata gave key a non-empty value.
func (r *Reading) IsSet(key string) bool { return r.values[key] != "" }

// Spelled rewrites a *MetadataError about a key that arrived as xFromEnv
// to name xFromEnv, the key the metadata's author wrote.
func (r *Reading) Spelled(err error) error {
	var me *MetadataError
	if errors.As(err, &me) {
		if k, ok := r.from[me.Key]; ok {
			out := *me
			out.Key = k
			return &out
		}
	}
	return err
}

// Applies reports whether a key is read under the context's policy.
func (r *Reading) Applies(info Info) bool {
	return info.Policies == nil || slices.Contains(info.Policies, r.Context.Policy)
}

// Apply reads keys into dst in order, defaulting those unset, and runs
// checks once they are all in; it returns the canonical texts of the
// sampled keys that apply.
func Apply[S any](r *Reading, keys []Key[S], checks []Check[S], dst *S) ([]string, error) {
	var texts []string
	for _, k := range keys {
		if !r.Applies(k.Info) {
			// Left unread: Unknown names who reads it, unless another
			// declaration of the key applies.
			if r.elsewhere == nil {
				r.elsewhere = map[string][]string{}
			}
			r.elsewhere[k.Name] = append(r.elsewhere[k.Name], k.Policies...)
			continue
		}
		r.used[k.Name] = true
		v := r.values[k.Name]
		switch {
		case v != "":
			if allowed, ok := k.read(dst, v, &r.Context); !ok {
				return nil, &MetadataError{Key: k.Name, Value: v, Allowed: allowed}
			}
		case k.Required:
			return nil, &MetadataError{Key: k.Name, Allowed: "required" + forSource(k.Info) + ": " + k.Doc}
		case k.reset != nil:
			k.reset(dst, &r.Context)
		}
		if k.then != nil {
			k.then(dst, &r.Context)
		}
		if k.Scope == Sampled {
			texts = append(texts, k.Name+"="+k.text(dst))
		}
		if r.settings != nil {
			r.settings = append(r.settings, setting(r, k, dst))
		}
	}
	for _, check := range checks {
		if err := check(dst, &r.Context, r.IsSet); err != nil {
			return nil, err
		}
	}
	return texts, nil
}

// PoliciesText names policies for an error: "policy queue", "policies
// fixed, queue".
func PoliciesText(ps []string) string {
	if len(ps) == 1 {
		return "policy " + ps[0]
	}
	return "policies " + strings.Join(ps, ", ")
}

func forSource(info Info) string {
	if len(info.Sources) == 1 {
		return " for source " + info.Sources[0]
	}
	return ""
}

// Unknown reports a key set twice (x and xFromEnv), or the first key (in
// sorted order) that nothing read: a key other sources or policies read
// (readers names them, besides the policies of the keys Apply declared but
// did not read) by what reads it, anything else with the known key nearest
// to it, when one is near.
func (r *Reading) Unknown(readers func(key string) (sources, policies []string)) error {
	if r.conflict != nil {
		return r.conflict
	}
	var left []string
	for k := range r.values {
		if !r.used[k] {
			left = append(left, k)
		}
	}
	if len(left) == 0 {
		return nil
	}
	slices.Sort(left)
	key := left[0]
	sources, policies := readers(key)
	policies = append(slices.Clone(r.elsewhere[key]), policies...)
	var allowed string
	switch {
	case len(sources) > 0:
		what := "source " + strings.Join(sources, ", ")
		if len(sources) > 1 {
			what = "sources " + strings.Join(sources, ", ")
		}
		allowed = fmt.Sprintf("only for %s (this trigger's source is %s)", what, r.Context.Source)
	case len(policies) > 0:
		allowed = fmt.Sprintf("only for %s (this trigger's policy is %s)", PoliciesText(policies), r.Context.Policy)
	}
	if allowed != "" {
		return &MetadataError{Key: cmp.Or(r.from[key], key), Value: r.values[key], Allowed: allowed}
	}
	known := make([]string, 0, len(r.used)+len(r.elsewhere))
	for k := range r.used {
		known = append(known, k)
	}
	for k := range r.elsewhere {
		known = append(known, k)
	}
	slices.Sort(known)
	// The nearest key rather than all of them: a list of seventy keys
	// hides the one the author meant, and the README lists them all.
	allowed = "unknown key"
	if near, ok := nearest(key, known); ok {
		allowed += "; did you mean " + Quote(near) + "?"
	}
	return &MetadataError{Key: cmp.Or(r.from[key], key), Allowed: allowed + " (the README's key tables list every key)"}
}
