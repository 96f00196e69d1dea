package trigger

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// The README's key tables are generated from the schema between markers
// <!-- keys:NAME --> and <!-- /keys:NAME -->, so they cannot drift from
// what the parser accepts. `scaler keys --write README.md` rewrites them;
// a test fails when they are stale.
const (
	TableCommon   = "common"
	TablePressure = "pressure"
	TableSources  = "sources"
	TablePolicies = "policies"
)

// row is one documented key, or a group of keys documented together.
type row struct {
	names   []string
	info    Info
	sources []string
}

// Keys lists every key of the schema once, in declaration order: the
// common keys, then each kind's (a key several kinds read appears once,
// naming them all).
func (s *Schema) Keys() []Info {
	var out []Info
	for _, k := range commonKeys(s) {
		out = append(out, k.Info)
	}
	for _, kind := range s.kinds {
		for _, info := range kind.keys {
			if i := slices.IndexFunc(out, func(o Info) bool { return o.Name == info.Name }); i >= 0 {
				out[i].Sources = append(out[i].Sources, kind.Name)
				continue
			}
			out = append(out, info)
		}
	}
	return out
}

// Table renders one of the README's key tables as Markdown.
func (s *Schema) Table(name string) (string, error) {
	var rows []row
	for _, info := range s.Keys() {
		if !inTable(name, info) {
			continue
		}
		if n := len(rows); info.Group != "" && n > 0 && rows[n-1].info.Group == info.Group && slices.Equal(rows[n-1].sources, info.Sources) {
			rows[n-1].names = append(rows[n-1].names, info.Name)
			continue
		}
		rows = append(rows, row{names: []string{info.Name}, info: info, sources: info.Sources})
	}
	var b strings.Builder
	switch name {
	case TableCommon, TablePressure:
		b.WriteString("| key | default | meaning |\n| --- | --- | --- |\n")
	case TableSources:
		b.WriteString("| key | source | default | meaning |\n| --- | --- | --- | --- |\n")
	case TablePolicies:
		b.WriteString("| key | policies | default | meaning |\n| --- | --- | --- | --- |\n")
	default:
		return "", fmt.Errorf("no key table %q", name)
	}
	for _, r := range rows {
		names := make([]string, len(r.names))
		for i, n := range r.names {
			names[i] = "`" + n + "`"
		}
		cells := []string{strings.Join(names, ", ")}
		switch name {
		case TableSources:
			cells = append(cells, strings.Join(r.sources, ", "))
		case TablePolicies:
			cells = append(cells, policiesCell(r.info.Policies))
		}
		cells = append(cells, defaultCell(r.info), meaning(r))
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String(), nil
}

func inTable(name string, info Info) bool {
	switch {
	case len(info.Sources) > 0:
		return name == TableSources
	case info.Policies == nil:
		return name == TableCommon
	case slices.Equal(info.Policies, onlyPressure):
		return name == TablePressure
	}
	return name == TablePolicies
}

func policiesCell(ps []string) string {
	if slices.Equal(ps, replicaPolicy) {
		return "all but `pressure`"
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = "`" + p + "`"
	}
	return strings.Join(out, ", ")
}

func defaultCell(info Info) string {
	switch {
	case info.Required:
		return "(required)"
	case info.Default == "" || info.Default == `""`:
		return "(none)"
	case strings.ContainsAny(info.Default, "`(") || strings.Contains(info.Default, " "):
		return info.Default
	}
	return "`" + info.Default + "`"
}

func meaning(r row) string {
	if len(r.names) > 1 {
		switch r.info.Group {
		case "metric names":
			return "rename the contract's metrics, one key per metric (see docs/exposition.md); " + r.info.Allowed
		case "queries":
			return "one PromQL query per dimension (see docs/exposition.md for their defaults)"
		}
	}
	if r.info.Required {
		return r.info.Doc
	}
	return r.info.Doc + "; " + r.info.Allowed
}

// UpdateDocs rewrites every generated key table in doc (a Markdown file)
// and reports whether anything changed.
func (s *Schema) UpdateDocs(doc []byte) ([]byte, bool, error) {
	out := doc
	for _, name := range []string{TableCommon, TablePressure, TableSources, TablePolicies} {
		begin, end := []byte("<!-- keys:"+name+" -->\n"), []byte("<!-- /keys:"+name+" -->")
		i, j := bytes.Index(out, begin), bytes.Index(out, end)
		if i < 0 || j < i {
			return nil, false, fmt.Errorf("no %s ... %s markers", begin[:len(begin)-1], end)
		}
		table, err := s.Table(name)
		if err != nil {
			return nil, false, err
		}
		next := slices.Concat(out[:i+len(begin)], []byte(table), out[j:])
		out = next
	}
	return out, !bytes.Equal(out, doc), nil
}
