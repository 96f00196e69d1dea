package target

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MetadataError is invalid trigger metadata: it names the key and says what
// is allowed. Surfaces map it to InvalidArgument.
type MetadataError struct {
	Key     string
	Value   string
	Allowed string
}

func (e *MetadataError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("metadata key %q: %s", e.Key, e.Allowed)
	}
	return fmt.Sprintf("metadata key %q: invalid value %q: %s", e.Key, e.Value, e.Allowed)
}

// Params reads trigger metadata key by key, remembering which keys were
// read so that anything left over is reported as unknown.
//
// KEDA forwards a key ending in FromEnv under that same name, with the
// environment variable's resolved value (and drops it when the variable does
// not resolve), so `targetPressureFromEnv` is read as `targetPressure`.
// Errors still name the key the way the trigger spelled it.
type Params struct {
	raw      map[string]string
	used     map[string]bool
	spelled  map[string]string // base key -> the FromEnv key it came from
	conflict error
}

// NewParams wraps a ScaledObject's scalerMetadata.
func NewParams(raw map[string]string) *Params {
	p := &Params{raw: make(map[string]string, len(raw)), used: map[string]bool{}, spelled: map[string]string{}}
	for k, v := range raw {
		base, fromEnv := strings.CutSuffix(k, "FromEnv")
		if !fromEnv || base == "" {
			p.raw[k] = v
			continue
		}
		if _, both := raw[base]; both {
			p.conflict = &MetadataError{Key: k, Allowed: fmt.Sprintf("set either %s or %s, not both", base, k)}
			continue
		}
		p.raw[base] = v
		p.spelled[base] = k
	}
	return p
}

// Spelled rewrites a *MetadataError about a key that arrived as xFromEnv to
// name xFromEnv, the key the trigger author wrote.
func (p *Params) Spelled(err error) error {
	var me *MetadataError
	if errors.As(err, &me) {
		if k, ok := p.spelled[me.Key]; ok {
			out := *me
			out.Key = k
			return &out
		}
	}
	return err
}

// Lookup returns a key's trimmed value and whether it is set (non-empty).
func (p *Params) Lookup(key string) (string, bool) {
	p.used[key] = true
	v := strings.TrimSpace(p.raw[key])
	return v, v != ""
}

// String returns a key's value or def.
func (p *Params) String(key, def string) string {
	if v, ok := p.Lookup(key); ok {
		return v
	}
	return def
}

// Enum returns a key's value, which must be one of allowed; def when unset.
func (p *Params) Enum(key, def string, allowed ...string) (string, error) {
	v := p.String(key, def)
	if !slices.Contains(allowed, v) {
		return "", &MetadataError{Key: key, Value: v, Allowed: "one of " + strings.Join(allowed, ", ")}
	}
	return v, nil
}

// Float returns a finite number within [lo, hi]; def when unset.
func (p *Params) Float(key string, def, lo, hi float64) (float64, error) {
	s, ok := p.Lookup(key)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return 0, &MetadataError{Key: key, Value: s, Allowed: rangeText("a number", lo, hi)}
	}
	return v, nil
}

// PositiveFloat returns a finite number > 0; def when unset.
func (p *Params) PositiveFloat(key string, def float64) (float64, error) {
	s, ok := p.Lookup(key)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, &MetadataError{Key: key, Value: s, Allowed: "a number greater than 0"}
	}
	return v, nil
}

// Int returns a whole number within [lo, hi]; def when unset.
func (p *Params) Int(key string, def, lo, hi int) (int, error) {
	s, ok := p.Lookup(key)
	if !ok {
		return def, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, &MetadataError{Key: key, Value: s, Allowed: rangeText("a whole number", float64(lo), float64(hi))}
	}
	return v, nil
}

// Duration returns a Go duration ("30s", "2m") within [lo, hi]; def when unset.
func (p *Params) Duration(key string, def, lo, hi time.Duration) (time.Duration, error) {
	s, ok := p.Lookup(key)
	if !ok {
		return def, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < lo || v > hi {
		return 0, &MetadataError{Key: key, Value: s, Allowed: fmt.Sprintf("a duration such as 30s or 2m, from %s to %s", lo, hi)}
	}
	return v, nil
}

// Bool returns true or false; def when unset.
func (p *Params) Bool(key string, def bool) (bool, error) {
	s, ok := p.Lookup(key)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, &MetadataError{Key: key, Value: s, Allowed: "true or false"}
	}
	return v, nil
}

// Ignore marks keys that are accepted and have no meaning here.
func (p *Params) Ignore(keys ...string) {
	for _, k := range keys {
		p.used[k] = true
	}
}

// Unknown reports a key set twice (x and xFromEnv), or the first key (in
// sorted order) that nothing read.
func (p *Params) Unknown() error {
	if p.conflict != nil {
		return p.conflict
	}
	var left []string
	for k := range p.raw {
		if !p.used[k] {
			left = append(left, cmp.Or(p.spelled[k], k))
		}
	}
	if len(left) == 0 {
		return nil
	}
	slices.Sort(left)
	known := make([]string, 0, len(p.used))
	for k := range p.used {
		known = append(known, k)
	}
	slices.Sort(known)
	return &MetadataError{Key: left[0], Allowed: "unknown key; allowed keys: " + strings.Join(known, ", ")}
}

func rangeText(kind string, lo, hi float64) string {
	switch {
	case math.IsInf(hi, 1) || hi == math.MaxInt:
		return fmt.Sprintf("%s of at least %g", kind, lo)
	default:
		return fmt.Sprintf("%s from %g to %g", kind, lo, hi)
	}
}
