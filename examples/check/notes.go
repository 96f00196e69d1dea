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
	return readBlocks(path, path, func(lines []string, i int) (first, end int, indent string) {
		if !strings.HasPrefix(lines[i], "  apiVersion:") {
			return 0, 0, ""
		}
		end = i
		for end < len(lines) && strings.HasPrefix(lines[end], "  ") && strings.TrimSpace(lines[end]) != "" {
			end++
		}
		return i, end, "  "
	})
}

// ReadMarkdown decodes the manifests a Markdown file shows: every ```yaml
// block whose first line is "apiVersion:", named name in messages. Other
// YAML blocks (values, configuration files, fragments of a trigger) are not
// manifests and are left alone.
func ReadMarkdown(path, name string) ([]*Document, error) {
	return readBlocks(path, name, func(lines []string, i int) (first, end int, indent string) {
		if strings.TrimSpace(lines[i]) != "```yaml" || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "apiVersion:") {
			return 0, 0, ""
		}
		end = i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		return i + 1, end, ""
	})
}

// readBlocks decodes the YAML blocks of a text file: at each line, block
// says whether one starts there, its lines [first, end) and the indent to
// cut from them. A block may hold several documents.
func readBlocks(path, name string, block func(lines []string, i int) (first, end int, indent string)) ([]*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs []*Document
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		first, end, indent := block(lines, i)
		if end <= first {
			continue
		}
		var b bytes.Buffer
		for _, l := range lines[first:end] {
			b.WriteString(strings.TrimPrefix(l, indent))
			b.WriteByte('\n')
		}
		for _, p := range split(b.Bytes()) {
			d, err := decodeOne(name, first+p.line, p.data)
			if err != nil {
				return nil, err
			}
			if d != nil {
				docs = append(docs, d)
			}
		}
		i = end
	}
	return docs, nil
}
