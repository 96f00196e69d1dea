package check

import (
	"bytes"
	"os"
	"strings"
)

// ReadNotes decodes the manifests a rendered NOTES.txt shows: every block of
// lines indented by two spaces that starts with "apiVersion:", up to the
// first line that is not indented (a blank line included).
func ReadNotes(path string) ([]*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs []*Document
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "  apiVersion:") {
			continue
		}
		start := i
		var block bytes.Buffer
		for ; i < len(lines) && strings.HasPrefix(lines[i], "  ") && strings.TrimSpace(lines[i]) != ""; i++ {
			block.WriteString(lines[i][2:])
			block.WriteByte('\n')
		}
		d, err := decodeOne(path, start+1, block.Bytes())
		if err != nil {
			return nil, err
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// ReadMarkdown decodes the manifests a Markdown file shows: every ```yaml
// block whose first line is "apiVersion:". Other YAML blocks (values,
// configuration files, fragments of a trigger) are not manifests and are
// left alone.
func ReadMarkdown(path, name string) ([]*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs []*Document
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```yaml" || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "apiVersion:") {
			continue
		}
		start := i + 1
		var block bytes.Buffer
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			block.WriteString(lines[i])
			block.WriteByte('\n')
		}
		for _, p := range split(block.Bytes()) {
			d, err := decodeOne(name, start+p.line, p.data)
			if err != nil {
				return nil, err
			}
			if d != nil {
				docs = append(docs, d)
			}
		}
	}
	return docs, nil
}
