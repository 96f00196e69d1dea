package envconfig

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The README's Environment table is generated from Config between these
// markers (`scaler keys --write README.md`); a test fails when it is stale.
const (
	tableBegin = "<!-- env -->\n"
	tableEnd   = "<!-- /env -->"
)

// Table renders the Environment table as Markdown: one row per variable,
// with its default and what it accepts.
func Table() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n| --- | --- | --- |\n")
	for _, v := range Vars() {
		def := "(none)"
		switch {
		case strings.HasPrefix(v.Default, "("):
			def = v.Default
		case v.Default != "":
			def = "`" + v.Default + "`"
		}
		meaning := v.Doc
		if v.Allowed != "" {
			meaning += "; " + v.Allowed
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, def, meaning)
	}
	return b.String()
}

// UpdateDocs rewrites the Environment table in doc (a Markdown file) and
// reports whether anything changed; a doc without the markers is refused.
func UpdateDocs(doc []byte) ([]byte, bool, error) {
	i, j := bytes.Index(doc, []byte(tableBegin)), bytes.Index(doc, []byte(tableEnd))
	if i < 0 || j < i {
		return nil, false, fmt.Errorf("no %s ... %s markers", strings.TrimSpace(tableBegin), tableEnd)
	}
	out := slices.Concat(doc[:i+len(tableBegin)], []byte(Table()), doc[j:])
	return out, !bytes.Equal(out, doc), nil
}

// List writes every variable, its default and what it accepts, as a
// command's usage lists its flags.
func List(w io.Writer) {
	for _, v := range Vars() {
		def := v.Default
		if def == "" {
			def = "(none)"
		}
		meaning := v.Doc
		if v.Allowed != "" {
			meaning += "; " + v.Allowed
		}
		fmt.Fprintf(w, "  %s, default %s\n    \t%s\n", v.Name, def, meaning)
	}
}
