package keyschema

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Column is a column of a key table between the key's name and its
// default: what it says of each key.
type Column struct {
	Header string
	Cell   func(Info) string
}

// Table renders keys as a Markdown table: the key, the columns, its
// default and its meaning. Consecutive keys of one group whose columns say
// the same share a row.
func Table(keys []Info, columns ...Column) string {
	type row struct {
		names []string
		info  Info
		cells []string
	}
	var rows []row
	for _, info := range keys {
		cells := make([]string, len(columns))
		for i, c := range columns {
			cells[i] = c.Cell(info)
		}
		if n := len(rows); info.Group.Name != "" && n > 0 && rows[n-1].info.Group.Name == info.Group.Name && slices.Equal(rows[n-1].cells, cells) {
			rows[n-1].names = append(rows[n-1].names, info.Name)
			continue
		}
		rows = append(rows, row{names: []string{info.Name}, info: info, cells: cells})
	}
	headers := []string{"key"}
	for _, c := range columns {
		headers = append(headers, c.Header)
	}
	headers = append(headers, "default", "meaning")
	var b strings.Builder
	b.WriteString("| " + strings.Join(headers, " | ") + " |\n|" + strings.Repeat(" --- |", len(headers)) + "\n")
	for _, r := range rows {
		names := make([]string, len(r.names))
		for i, n := range r.names {
			names[i] = "`" + n + "`"
		}
		cells := slices.Concat([]string{strings.Join(names, ", ")}, r.cells, []string{defaultCell(r.info), meaning(r.info, len(r.names))})
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
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

func meaning(info Info, keys int) string {
	switch {
	case keys > 1:
		return info.Group.Doc
	case info.Required:
		return info.Doc
	}
	return info.Doc + "; " + info.Allowed
}

// UpdateDocs rewrites the generated tables in doc (a Markdown file), each
// between the markers <!-- keys:NAME --> and <!-- /keys:NAME -->, with
// what render returns for its name, and reports whether anything changed.
func UpdateDocs(doc []byte, names []string, render func(name string) (string, error)) ([]byte, bool, error) {
	out := doc
	for _, name := range names {
		begin, end := []byte("<!-- keys:"+name+" -->\n"), []byte("<!-- /keys:"+name+" -->")
		i, j := bytes.Index(out, begin), bytes.Index(out, end)
		if i < 0 || j < i {
			return nil, false, fmt.Errorf("no %s ... %s markers", begin[:len(begin)-1], end)
		}
		table, err := render(name)
		if err != nil {
			return nil, false, err
		}
		out = slices.Concat(out[:i+len(begin)], []byte(table), out[j:])
	}
	return out, !bytes.Equal(out, doc), nil
}
