package trigger

import (
	"fmt"
	"slices"
	"strings"

	"github.com/barometer-scaler/barometer/pkg/keyschema"
	"github.com/barometer-scaler/barometer/pkg/policy"
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

// Keys lists every key of the schema once, in declaration order: the
// common keys, then each replica policy's, then each source kind's. A key
// several kinds read appears once, naming them all; where their defaults
// differ, its default names each ("unbounded; `max_count`: `0`").
func (s *Schema) Keys() []keyschema.Info {
	var out []keyschema.Info
	for _, k := range commonKeys(s) {
		out = append(out, k.Info)
	}
	first := map[string]string{} // a key's first declaration's default
	for _, i := range out {
		first[i.Name] = i.Default
	}
	merge := func(info keyschema.Info, by string, readers func(*keyschema.Info) *[]string) {
		i := slices.IndexFunc(out, func(o keyschema.Info) bool { return o.Name == info.Name })
		if i < 0 {
			out = append(out, info)
			first[info.Name] = info.Default
			return
		}
		*readers(&out[i]) = append(*readers(&out[i]), by)
		if info.Default != first[info.Name] {
			out[i].Default += fmt.Sprintf("; `%s`: `%s`", by, info.Default)
		}
	}
	for _, kind := range policy.Kinds() {
		for _, info := range kind.Keys() {
			merge(info, kind.Name, func(i *keyschema.Info) *[]string { return &i.Policies })
		}
	}
	for _, kind := range s.kinds {
		for _, info := range kind.Keys() {
			merge(info, kind.Name, func(i *keyschema.Info) *[]string { return &i.Sources })
		}
	}
	return out
}

// Table renders one of the README's key tables as Markdown.
func (s *Schema) Table(name string) (string, error) {
	var columns []keyschema.Column
	switch name {
	case TableCommon, TablePressure:
	case TableSources:
		columns = []keyschema.Column{{Header: "source", Cell: func(i keyschema.Info) string { return strings.Join(i.Sources, ", ") }}}
	case TablePolicies:
		columns = []keyschema.Column{{Header: "policies", Cell: func(i keyschema.Info) string { return policiesCell(i.Policies) }}}
	default:
		return "", fmt.Errorf("no key table %q", name)
	}
	var keys []keyschema.Info
	for _, info := range s.Keys() {
		if inTable(name, info) {
			keys = append(keys, info)
		}
	}
	return keyschema.Table(keys, columns...), nil
}

func inTable(name string, info keyschema.Info) bool {
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
	if slices.Equal(ps, replicaPolicies()) {
		return "all but `pressure`"
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = "`" + p + "`"
	}
	return strings.Join(out, ", ")
}

// UpdateDocs rewrites every generated key table in doc (a Markdown file)
// and reports whether anything changed.
func (s *Schema) UpdateDocs(doc []byte) ([]byte, bool, error) {
	return keyschema.UpdateDocs(doc, []string{TableCommon, TablePressure, TableSources, TablePolicies}, s.Table)
}
