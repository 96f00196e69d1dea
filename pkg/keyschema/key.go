// Package keyschema is the engine of declared configuration keys: a key
// is declared once, with its parser, range, default and documentation,
// and the parsing, the errors, the documentation tables and any derived
// surface (the simulator's flags) all read the declaration. It knows
// nothing of what the keys configure: pkg/trigger declares the trigger's
// keys with it, and each source package its kind's (pkg/pressure/sourcekind).
package keyschema

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scope says whether a key shapes the sampler or only how it is read.
type Scope int

const (
	// Sampled keys are part of a trigger's identity: triggers that differ
	// in one are sampled apart.
	Sampled Scope = iota
	// Read keys are read by the surfaces only (the target KEDA divides
	// by, the activation threshold, the metric's name): triggers that
	// differ only in them share a sampler.
	Read
)

// Type is the kind of value a key takes, set by the constructor that
// declares it: what a derived surface needs to know of a key without
// parsing a value (a true/false key is a boolean flag, say).
type Type int

const (
	TypeText     Type = iota // a string or a structured text (Text, String)
	TypeNumber               // a decimal number (Float)
	TypeWhole                // a whole number (Int)
	TypeDuration             // a Go duration (Duration)
	TypeBool                 // true or false (Bool)
	TypeEnum                 // one of a fixed set of words (Enum)
)

// Group gathers keys documented as one row (the metric renames, the
// queries), each still a key of its own. Doc is the row's meaning.
type Group struct {
	Name string
	Doc  string
}

// Info is what a key declares about itself, for documentation and for the
// checks that need no value: its name, what it means, its default and what
// it allows, and which sources and policies read it.
type Info struct {
	Name     string
	Doc      string
	Type     Type
	Default  string   // as documented; "" when the key has none
	Allowed  string   // the values it takes, as errors and docs say it
	Sources  []string // the sources that read it; nil: every source
	Policies []string // the policies that read it; nil: every policy
	Scope    Scope
	Required bool
	// Simulated says the simulator's controllers read the key, so the
	// simulator takes it as a flag (InSimulator).
	Simulated bool
	Group     Group
}

// Key declares one trigger key of the struct S its value goes into. A key
// is declared once, with its parser, range and default; the parser, the
// validation, the errors, the README and the simulator's flags all derive
// from the declaration.
type Key[S any] struct {
	Info
	// read parses a trimmed, non-empty value into dst. It returns the
	// text of what is allowed when the value is not.
	read func(dst *S, value string, c *Context) (allowed string, ok bool)
	// reset puts the default into dst; nil leaves dst's zero value.
	reset func(dst *S, c *Context)
	// then runs after the value is in dst, set or defaulted.
	then func(dst *S, c *Context)
	// text is the canonical text of the value in dst: equal meanings give
	// equal texts, so it can be part of an identity.
	text func(dst *S) string
	// shown, when set, is the text Settings shows instead of text.
	shown func(dst *S) string
	// preset: the value was put in place by a key read before it (a
	// profile), which Settings names as the value's origin.
	preset bool
}

// Context is what a key's default and parser may depend on besides its own
// value: the scaler's defaults and the keys parsed before it.
type Context struct {
	// DefaultInterval is the sampleInterval when a trigger sets none.
	DefaultInterval time.Duration
	// Namespace is the namespace of the ScaledObject whose trigger this
	// is ("" for the scaler's own default target).
	Namespace string
	// Source and Policy are the trigger's source kind and policy.
	Source, Policy string
	// Interval is the trigger's sample interval, once the common keys are
	// read (a source's keys come after them).
	Interval time.Duration
}

// Describe sets the key's documentation.
func (k Key[S]) Describe(doc string) Key[S] { k.Doc = doc; return k }

// For restricts the key to the named policies: set for another, it is
// refused rather than ignored.
func (k Key[S]) For(policies ...string) Key[S] { k.Policies = policies; return k }

// OnlyRead marks a key read by the surfaces only (see Read).
func (k Key[S]) OnlyRead() Key[S] { k.Scope = Read; return k }

// Documented replaces the documented default, for a default that depends
// on the scaler's configuration or on other keys.
func (k Key[S]) Documented(def string) Key[S] { k.Default = def; return k }

// Require makes the key mandatory.
func (k Key[S]) Require() Key[S] { k.Required = true; return k }

// DefaultFrom replaces the key's fixed default with one computed from the
// context: when the trigger leaves the key unset, reset puts the default
// into dst (sampleInterval's comes from the scaler, metricName's and
// maxReplicas' from the policy).
func (k Key[S]) DefaultFrom(reset func(dst *S, c *Context)) Key[S] { k.reset = reset; return k }

// Then runs fn once the key's value is in dst: for a key that decides how
// the others start (the policy's options).
func (k Key[S]) Then(fn func(dst *S, c *Context)) Key[S] { k.then = fn; return k }

// Format replaces the canonical text of the key's value.
func (k Key[S]) Format(text func(dst *S) string) Key[S] { k.text = text; return k }

// Preset leaves an unset key's field as an earlier key's Then put it (a
// signal option's default is its profile's).
func (k Key[S]) Preset() Key[S] { k.reset, k.preset = nil, true; return k }

// InSimulator marks a key the simulator's controllers read (Simulated).
func (k Key[S]) InSimulator() Key[S] { k.Simulated = true; return k }

// InGroup documents the key in one row with the others of g.
func (k Key[S]) InGroup(g Group) Key[S] { k.Group = g; return k }

// ShowAs replaces the text Settings shows of the key's value, for a value
// that may hold a credential: a person sees text(dst), the identity still
// reads the whole value.
func (k Key[S]) ShowAs(text func(dst *S) string) Key[S] { k.shown = text; return k }

// Canonical is the canonical text of the key's value in dst: equal
// meanings give equal texts.
func (k Key[S]) Canonical(dst *S) string { return k.text(dst) }

// Field points a key at the field of S its value goes into.
type Field[S, T any] func(*S) *T

// FloatRange is a closed interval, or open at the bottom when OpenLow.
type FloatRange struct {
	Lo, Hi  float64
	OpenLow bool
}

func (r FloatRange) contains(v float64) bool {
	return v <= r.Hi && (v > r.Lo || !r.OpenLow && v == r.Lo)
}

// String is the range in interval notation, as errors and docs say it:
// "a number in (0, 1]", "a number in [0, inf)".
func (r FloatRange) String() string {
	left, right := "[", FormatFloat(r.Hi)+"]"
	if r.OpenLow {
		left = "("
	}
	if math.IsInf(r.Hi, 1) {
		right = "inf)"
	}
	return "a number in " + left + FormatFloat(r.Lo) + ", " + right
}

// AtLeast is [lo, +inf); Above is (lo, +inf); Between is [lo, hi].
func AtLeast(lo float64) FloatRange         { return FloatRange{Lo: lo, Hi: math.Inf(1)} }
func Above(lo float64) FloatRange           { return FloatRange{Lo: lo, Hi: math.Inf(1), OpenLow: true} }
func Between(lo, hi float64) FloatRange     { return FloatRange{Lo: lo, Hi: hi} }
func AboveUpTo(lo, hi float64) FloatRange   { return FloatRange{Lo: lo, Hi: hi, OpenLow: true} }
func formatDuration(d time.Duration) string { return d.String() }

// FormatFloat is the canonical text of a number.
func FormatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// ParseNumber reads a decimal number: an optional '-', digits, a fraction
// and an exponent ("1e-3", "2.5E+2"). Go's other spellings (hex floats, '_'
// separators, a leading '+', Inf and NaN) are refused: a trigger is written
// by people, and those spellings are more often a slip than a wish.
func ParseNumber(s string) (float64, bool) {
	for i := range len(s) {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == '.', c == 'e', c == 'E':
		case c == '-' && (i == 0 || s[i-1] == 'e' || s[i-1] == 'E'):
		case c == '+' && i > 0 && (s[i-1] == 'e' || s[i-1] == 'E'):
		default:
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// ParseWhole reads a decimal whole number, refusing the same spellings as
// ParseNumber.
func ParseWhole(s string) (int64, bool) {
	if strings.ContainsAny(s, "_+") {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// Float declares a number key within r.
func Float[S any](name string, f Field[S, float64], def float64, r FloatRange) Key[S] {
	allowed := r.String()
	return Key[S]{
		Info: Info{Name: name, Type: TypeNumber, Default: FormatFloat(def), Allowed: allowed},
		read: func(dst *S, s string, _ *Context) (string, bool) {
			v, ok := ParseNumber(s)
			if !ok || !r.contains(v) {
				return allowed, false
			}
			*f(dst) = v
			return "", true
		},
		reset: func(dst *S, _ *Context) { *f(dst) = def },
		text:  func(dst *S) string { return FormatFloat(*f(dst)) },
	}
}

// Int declares a whole-number key within [lo, hi]; hi math.MaxInt for no
// upper bound.
func Int[S any, N ~int | ~int64](name string, f Field[S, N], def, lo, hi N) Key[S] {
	allowed := fmt.Sprintf("a whole number >= %d and <= %d", lo, hi)
	if int64(hi) == math.MaxInt {
		allowed = fmt.Sprintf("a whole number >= %d", lo)
	}
	return Key[S]{
		Info: Info{Name: name, Type: TypeWhole, Default: strconv.FormatInt(int64(def), 10), Allowed: allowed},
		read: func(dst *S, s string, _ *Context) (string, bool) {
			v, ok := ParseWhole(s)
			if !ok || N(v) < lo || N(v) > hi {
				return allowed, false
			}
			*f(dst) = N(v)
			return "", true
		},
		reset: func(dst *S, _ *Context) { *f(dst) = def },
		text:  func(dst *S) string { return strconv.FormatInt(int64(*f(dst)), 10) },
	}
}

// Duration declares a Go duration key ("30s", "2m") within [lo, hi], or
// (0, hi] when positive.
func Duration[S any](name string, f Field[S, time.Duration], def, lo, hi time.Duration, positive bool) Key[S] {
	allowed := fmt.Sprintf("a duration such as 30s or 2m, from %s to %s", lo, hi)
	switch {
	case positive:
		allowed = fmt.Sprintf("a duration > 0 such as 30s or 2m, at most %s", hi)
	case lo == 0:
		allowed = fmt.Sprintf("a duration >= 0 such as 30s or 2m, at most %s", hi)
	}
	return Key[S]{
		Info: Info{Name: name, Type: TypeDuration, Default: formatDuration(def), Allowed: allowed},
		read: func(dst *S, s string, _ *Context) (string, bool) {
			v, err := time.ParseDuration(s)
			if err != nil || v < lo || v > hi || positive && v <= 0 || strings.ContainsAny(s, "_+") {
				return allowed, false
			}
			*f(dst) = v
			return "", true
		},
		reset: func(dst *S, _ *Context) { *f(dst) = def },
		text:  func(dst *S) string { return formatDuration(*f(dst)) },
	}
}

// Bool declares a true/false key.
func Bool[S any](name string, f Field[S, bool], def bool) Key[S] {
	return Key[S]{
		Info: Info{Name: name, Type: TypeBool, Default: strconv.FormatBool(def), Allowed: "true or false"},
		read: func(dst *S, s string, _ *Context) (string, bool) {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return "true or false", false
			}
			*f(dst) = v
			return "", true
		},
		reset: func(dst *S, _ *Context) { *f(dst) = def },
		text:  func(dst *S) string { return strconv.FormatBool(*f(dst)) },
	}
}

// Enum declares a key whose value is one of values.
func Enum[S any](name string, f Field[S, string], def string, values ...string) Key[S] {
	allowed := "one of " + strings.Join(values, ", ")
	return Key[S]{
		Info: Info{Name: name, Type: TypeEnum, Default: def, Allowed: allowed},
		read: func(dst *S, s string, _ *Context) (string, bool) {
			if !slices.Contains(values, s) {
				return allowed, false
			}
			*f(dst) = s
			return "", true
		},
		reset: func(dst *S, _ *Context) { *f(dst) = def },
		text:  func(dst *S) string { return *f(dst) },
	}
}

// Text declares a key of any type T read by parse, which returns the
// allowed text when the value is not. format is T's canonical text.
func Text[S, T any](name string, f Field[S, T], def T, allowed string, parse func(s string, c *Context) (T, string, bool), format func(T) string) Key[S] {
	return Key[S]{
		Info: Info{Name: name, Type: TypeText, Default: format(def), Allowed: allowed},
		read: func(dst *S, s string, c *Context) (string, bool) {
			v, why, ok := parse(s, c)
			if !ok {
				return why, false
			}
			*f(dst) = v
			return "", true
		},
		reset: func(dst *S, _ *Context) { *f(dst) = def },
		text:  func(dst *S) string { return format(*f(dst)) },
	}
}

// String declares a key whose value is kept as written, once valid says so.
func String[S any](name string, f Field[S, string], def, allowed string, valid func(string, *Context) bool) Key[S] {
	k := Text(name, f, def, allowed, func(s string, c *Context) (string, string, bool) {
		if valid != nil && !valid(s, c) {
			return "", allowed, false
		}
		return s, "", true
	}, strconv.Quote)
	k.Default = def
	return k
}
