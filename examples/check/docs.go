package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Docs is what the project documents: the trigger metadata keys a Barometer
// trigger may carry, and the shape of GET /scale.
type Docs struct {
	// Keys maps every documented metadata key to where it is documented.
	Keys map[string]string
	// KEDAKeys are the keys the README says KEDA itself reads (accepted and
	// ignored by the scaler).
	KEDAKeys []string
	// Scale is the README's example response of GET /scale.
	Scale map[string]any
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	keyName    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
)

// keyColumns are the table columns that list metadata keys: "key" in the
// metadata tables, "rename with" in the exposition contract's series table.
var keyColumns = map[string]bool{"key": true, "rename with": true}

// LoadDocs reads README.md and docs/*.md under root.
func LoadDocs(root string) (*Docs, error) {
	d := &Docs{Keys: map[string]string{}}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, f)
		tableKeys(rel, data, d.Keys)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return nil, err
	}
	// "KEDA's own keys (`scalerAddress`, ...)": the parenthesis lists them.
	if _, after, ok := strings.Cut(string(readme), "KEDA's own keys"); ok {
		list, _, _ := strings.Cut(after, ")")
		for _, m := range backticked.FindAllStringSubmatch(list, -1) {
			d.KEDAKeys = append(d.KEDAKeys, m[1])
			d.Keys[m[1]] = "README.md (KEDA's own keys)"
		}
	}
	if len(d.KEDAKeys) == 0 {
		return nil, fmt.Errorf("README.md: no \"KEDA's own keys (`...`)\" list")
	}
	if d.Scale, err = scaleExample(readme); err != nil {
		return nil, fmt.Errorf("README.md: %w", err)
	}
	if len(d.Keys) == len(d.KEDAKeys) {
		return nil, fmt.Errorf("no metadata key tables (| key | ... |) in README.md or docs/*.md")
	}
	return d, nil
}

// tableKeys adds the keys listed in the key columns of every Markdown table.
func tableKeys(file string, data []byte, keys map[string]string) {
	var cols []int // key columns of the current table; nil outside one
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	inHeader := false
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			cols, inHeader = nil, false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		switch {
		case cols == nil && !inHeader:
			// A header row.
			inHeader = true
			cols = []int{}
			for i, c := range cells {
				if keyColumns[strings.ToLower(strings.TrimSpace(c))] {
					cols = append(cols, i)
				}
			}
		case inHeader:
			inHeader = false // the | --- | row
		default:
			for _, i := range cols {
				if i >= len(cells) {
					continue
				}
				for _, m := range backticked.FindAllStringSubmatch(cells[i], -1) {
					if keyName.MatchString(m[1]) {
						if _, seen := keys[m[1]]; !seen {
							keys[m[1]] = file + ":" + strconv.Itoa(n)
						}
					}
				}
			}
		}
	}
}

// scaleExample is the first ```json block after a line that runs
// `curl ... /scale`.
func scaleExample(readme []byte) (map[string]any, error) {
	lines := strings.Split(string(readme), "\n")
	for i, l := range lines {
		if !strings.Contains(l, "curl") || !strings.HasSuffix(strings.TrimSpace(l), "/scale") {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) != "```json" {
				continue
			}
			var body strings.Builder
			for k := j + 1; k < len(lines) && strings.TrimSpace(lines[k]) != "```"; k++ {
				body.WriteString(lines[k])
				body.WriteByte('\n')
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(body.String()), &m); err != nil {
				return nil, fmt.Errorf("the GET /scale example is not JSON: %w", err)
			}
			return m, nil
		}
	}
	return nil, fmt.Errorf("no ```json example after a `curl .../scale` line")
}

// Lookup follows a dotted path (KEDA's valueLocation, a GJSON path in its
// simplest form) through decoded JSON.
func Lookup(v any, path string) (any, bool) {
	for p := range strings.SplitSeq(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[p]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}
