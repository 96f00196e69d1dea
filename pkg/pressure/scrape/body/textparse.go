package body

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parseTextSeries reads a filtered text body (filterText) into series,
// without building expfmt's families. It takes the body only where it is
// sure to read it as expfmt's text parser does: every line a sample of a
// family typed gauge, counter or untyped (or not typed), or that family's
// HELP or TYPE comment, spelled the plain way (unquoted names, no
// histogram or summary family). For anything else (a quoted name, a
// histogram, a line expfmt would refuse) it returns false and the caller
// parses the body with expfmt, which also gives the precise error.
// FuzzTextParseAgreement holds the two to the same series.
func parseTextSeries(b []byte, f *Families, dst []Series) ([]Series, bool) {
	// Per family: typed (a TYPE line or a sample seen, after which
	// expfmt refuses a TYPE line) and helped (a HELP line seen).
	const typed, helped = 1, 2
	var state [maxFamilies]uint8
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			// expfmt refuses a last line without its newline unless it
			// is blank.
			if len(skipBlanks(b)) > 0 {
				return dst, false
			}
			break
		}
		line := skipBlanks(b[:i])
		b = b[i+1:]
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			keyword, rest := cutToken(skipBlanks(line[1:]))
			isHelp, isType := string(keyword) == "HELP", string(keyword) == "TYPE"
			if len(rest) == 0 || !isHelp && !isType {
				continue // a plain comment, or a keyword alone
			}
			name, rest, ok := metricName(skipBlanks(rest))
			if !ok {
				return dst, false
			}
			if len(rest) == 0 {
				continue // a name alone
			}
			if rest[0] != ' ' && rest[0] != '\t' {
				return dst, false
			}
			fam, ok := f.index[string(name)]
			if !ok {
				return dst, false
			}
			rest = skipBlanks(rest)
			switch {
			case len(rest) == 0:
			case isHelp:
				if state[fam]&helped != 0 || !validEscapes(rest) {
					return dst, false
				}
				state[fam] |= helped
			default:
				if state[fam]&typed != 0 || !plainType(rest) {
					return dst, false
				}
				state[fam] |= typed
			}
			continue
		}
		name, rest, ok := metricName(line)
		if !ok || len(rest) > 0 && rest[0] == '"' {
			return dst, false
		}
		fam, ok := f.index[string(name)]
		if !ok {
			return dst, false
		}
		state[fam] |= typed
		s := Series{family: fam, hasValue: true}
		rest = skipBlanks(rest)
		if len(rest) > 0 && rest[0] == '{' {
			if rest, ok = readLabelSet(rest[1:], &s); !ok {
				return dst, false
			}
			rest = skipBlanks(rest)
		}
		value, rest := cutToken(rest)
		if bytes.ContainsAny(value, "pP_") {
			return dst, false
		}
		v, err := strconv.ParseFloat(string(value), 64)
		if err != nil {
			return dst, false
		}
		if len(rest) > 0 {
			// A timestamp, which the source does not read, then nothing.
			ts, tail := cutToken(skipBlanks(rest))
			if _, err := strconv.ParseInt(string(ts), 10, 64); err != nil || len(tail) > 0 {
				return dst, false
			}
		}
		s.value = v
		dst = append(dst, s)
	}
	return dst, true
}

// readLabelSet reads a label set after its '{' into s, returning what follows
// the '}'. It refuses what expfmt refuses (a reserved or repeated name, a
// bad escape, invalid UTF-8) and what this parser leaves to expfmt (a
// quoted name).
func readLabelSet(b []byte, s *Series) ([]byte, bool) {
	var seen [16][]byte // the names so far, to refuse a repeated one
	n := 0
	for {
		b = skipBlanks(b)
		if len(b) == 0 {
			return nil, false
		}
		if b[0] == '}' {
			return b[1:], true
		}
		if !labelStart(b[0]) {
			return nil, false
		}
		i := 1
		for i < len(b) && (labelStart(b[i]) || b[i] >= '0' && b[i] <= '9') {
			i++
		}
		name := b[:i]
		b = skipBlanks(b[i:])
		if len(b) == 0 || b[0] != '=' || string(name) == "__name__" || n == len(seen) {
			return nil, false
		}
		for _, prev := range seen[:n] {
			if bytes.Equal(prev, name) {
				return nil, false
			}
		}
		seen[n], n = name, n+1
		b = skipBlanks(b[1:])
		if len(b) == 0 || b[0] != '"' {
			return nil, false
		}
		end, escaped := labelValueEnd(b[1:])
		if end < 0 {
			return nil, false
		}
		raw := b[1 : 1+end]
		if !utf8.Valid(raw) {
			return nil, false
		}
		if k := readLabel(name); k >= 0 {
			if escaped {
				s.labels[k] = unescape(raw)
			} else {
				s.labels[k] = string(raw)
			}
		}
		b = skipBlanks(b[2+end:])
		switch {
		case len(b) > 0 && b[0] == ',':
			b = b[1:]
		case len(b) > 0 && b[0] == '}':
			return b[1:], true
		default:
			return nil, false
		}
	}
}

// labelStart: a byte that may start an unquoted label name. expfmt also
// takes '"' there (a quoted name), which is left to it.
func labelStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// metricName reads an unquoted metric name at the start of b. A quote
// inside the name, or a name that does not start as one, is left to
// expfmt.
func metricName(b []byte) (name, rest []byte, ok bool) {
	if len(b) == 0 || !labelStart(b[0]) && b[0] != ':' {
		return nil, nil, false
	}
	name, rest = token(b)
	if len(rest) > 0 && rest[0] == '"' {
		return nil, nil, false
	}
	return name, rest, true
}

// labelValueEnd returns the index of the quote that ends a label value,
// -1 when the value does not end on the line or has an escape expfmt
// refuses; escaped says it has escapes to undo.
func labelValueEnd(b []byte) (end int, escaped bool) {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i, escaped
		case '\\':
			if i+1 == len(b) || b[i+1] != '"' && b[i+1] != '\\' && b[i+1] != 'n' {
				return -1, false
			}
			escaped = true
			i++
		}
	}
	return -1, false
}

// unescape undoes a label value's escapes, which labelValueEnd checked.
func unescape(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '\\' {
			i++
			if c = raw[i]; c == 'n' {
				c = '\n'
			}
		}
		out = append(out, c)
	}
	return string(out)
}

// validEscapes reports whether a HELP text's escapes are ones expfmt takes:
// \\, \n and \".
func validEscapes(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' {
			if i+1 == len(b) || b[i+1] != '\\' && b[i+1] != 'n' && b[i+1] != '"' {
				return false
			}
			i++
		}
	}
	return true
}

// plainType reports whether a TYPE line's type (the rest of the line, as
// expfmt reads it) is gauge, counter or untyped, in any ASCII case.
func plainType(b []byte) bool {
	for _, t := range []string{"gauge", "counter", "untyped"} {
		if len(b) == len(t) && bytes.EqualFold(b, []byte(t)) {
			return true
		}
	}
	return false
}

// cutToken splits b at its first blank or tab.
func cutToken(b []byte) (tok, rest []byte) {
	if i := bytes.IndexAny(b, " \t"); i >= 0 {
		return b[:i], b[i:]
	}
	return b, nil
}

// ErrTooManySeries fails a replica that exposes more of the contract's
// series than the series limit.
var ErrTooManySeries = errors.New("the replica exposes more series of the contract's families than the series limit")

// TextParser reads filtered text bodies. It is safe for concurrent use;
// expfmt's parsers, for the bodies parseTextSeries leaves to them, are
// pooled. The zero value is ready to use.
type TextParser struct {
	pars sync.Pool // *expfmt.TextParser
}

// Parse reads a filtered text body into series of f's families, appended
// to dst: by parseTextSeries where it takes the body, by expfmt's parser
// otherwise (a histogram or summary family, quoted names, or a body expfmt
// refuses, with expfmt's error). More than limit series (0: none) fail it.
func (p *TextParser) Parse(b []byte, f *Families, limit int, dst []Series) ([]Series, error) {
	// The filtered text is one line a series (and the comments): count
	// them before the parse, which is where the memory goes.
	if n := textSeries(b); limit > 0 && n > limit {
		return dst, fmt.Errorf("%w (%d, limit %d: seriesLimit)", ErrTooManySeries, n, limit)
	}
	if ss, ok := parseTextSeries(b, f, dst); ok {
		return ss, nil
	}
	tp, _ := p.pars.Get().(*expfmt.TextParser)
	if tp == nil {
		x := expfmt.NewTextParser(model.UTF8Validation)
		tp = &x
	}
	defer p.pars.Put(tp)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return dst, fmt.Errorf("parse text exposition: %w", err)
	}
	return fromFamilies(fams, f, dst), nil
}

// textSeries counts the sample lines of a filtered text exposition.
func textSeries(b []byte) int {
	n := 0
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if line = skipBlanks(line); len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}
