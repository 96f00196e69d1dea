package envconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v2"
)

// The README's Environment table is generated from Config; CI fails here
// when a variable changed and `go run ./cmd/scaler keys --write README.md`
// was not run.
func TestREADMEEnvironmentTableIsFresh(t *testing.T) {
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, changed, err := UpdateDocs(doc)
	if err != nil {
		t.Fatal(err)
	}
	if changed {
		t.Fatal("README.md's Environment table is stale: run `go run ./cmd/scaler keys --write README.md`")
	}
}

func TestUpdateDocsRefusesAFileWithoutMarkers(t *testing.T) {
	if _, _, err := UpdateDocs([]byte("# notes\n")); err == nil || !strings.Contains(err.Error(), "<!-- env -->") {
		t.Fatalf("a file without the markers: %v", err)
	}
}

const chart = "../../charts/barometer/"

// chartChoices are the defaults the chart sets on purpose apart from the
// scaler's, each said in the chart's README.
var chartChoices = map[string]string{
	"BAROMETER_LOG_FORMAT": "json", // log collectors in a cluster read JSON
}

// The chart's env list and its defaults (values.yaml, through the
// deployment template) agree with the declarations: every variable the
// template sets is declared, and every config value the chart ships is the
// scaler's own default, or a choice listed in chartChoices; the schema's
// ranges and values are the declared ones.
func TestChartAgreesWithDeclarations(t *testing.T) {
	vars := map[string]Var{}
	for _, v := range Vars() {
		vars[v.Name] = v
	}
	tmpl, err := os.ReadFile(chart + "templates/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`- name: (BAROMETER_\w+)`).FindAllStringSubmatch(string(tmpl), -1) {
		if _, ok := vars[m[1]]; !ok {
			t.Errorf("templates/deployment.yaml sets %s, which the scaler does not declare", m[1])
		}
	}
	// config.X as the template renders it: {{- with .Values.config.X }}
	// (or a pipeline of it, `| toString` for a bool) then the variable's name.
	fromValue := map[string]string{}
	for _, m := range regexp.MustCompile(`\.Values\.config\.(\w+)[^}]* }}\s*- name: (BAROMETER_\w+)`).FindAllStringSubmatch(string(tmpl), -1) {
		fromValue[m[1]] = m[2]
	}
	var values struct {
		Config map[string]any `yaml:"config"`
		Ports  map[string]int `yaml:"ports"`
	}
	raw, err := os.ReadFile(chart + "values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	for key, value := range values.Config {
		name, ok := fromValue[key]
		if !ok {
			t.Errorf("values.yaml config.%s: the template sets no variable from it", key)
			continue
		}
		if !regexp.MustCompile(`(?m)^  # ` + name + `:`).Match(raw) {
			t.Errorf("values.yaml config.%s sets %s, and no comment there says so", key, name)
		}
		text := fmt.Sprint(value)
		if text == "" || text == "[]" || text == "map[]" {
			continue // the scaler's own default
		}
		want := vars[name].Default
		if choice, ok := chartChoices[name]; ok {
			want = choice
		}
		if !sameValue(text, want) {
			t.Errorf("values.yaml config.%s is %q; %s's default is %q", key, text, name, want)
		}
	}
	for port, name := range map[string]string{"grpc": "BAROMETER_GRPC_ADDR", "http": "BAROMETER_HTTP_ADDR"} {
		if got := fmt.Sprintf(":%d", values.Ports[port]); got != vars[name].Default {
			t.Errorf("values.yaml ports.%s renders %s=%s; its default is %s", port, name, got, vars[name].Default)
		}
	}
	checkSchema(t, vars, fromValue)
}

// checkSchema compares values.schema.json's bounds, enums and stated
// ranges for config with the declarations.
func checkSchema(t *testing.T, vars map[string]Var, fromValue map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(chart + "values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Config struct {
				Properties map[string]struct {
					Minimum     *json.Number `json:"minimum"`
					Maximum     *json.Number `json:"maximum"`
					Enum        []string     `json:"enum"`
					Description string       `json:"description"`
				} `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	stated := regexp.MustCompile(`(\S+ to \S+|\S+ or more)$`)
	for key, p := range schema.Properties.Config.Properties {
		v := vars[fromValue[key]]
		for tag, bound := range map[string]*json.Number{"min": p.Minimum, "max": p.Maximum} {
			if bound != nil && bound.String() != v.field.Tag.Get(tag) {
				t.Errorf("values.schema.json config.%s: %s %s; %s declares %q", key, tag, bound, v.Name, v.field.Tag.Get(tag))
			}
		}
		if p.Enum != nil {
			var got []string
			for _, e := range p.Enum {
				if e != "" && !slices.Contains(got, strings.ToLower(e)) {
					got = append(got, strings.ToLower(e))
				}
			}
			if want := strings.Fields(v.field.Tag.Get("oneof")); !slices.Equal(got, want) {
				t.Errorf("values.schema.json config.%s allows %v; %s allows %v", key, got, v.Name, want)
			}
		}
		if m := stated.FindString(p.Description); m != "" && !strings.HasSuffix(v.Allowed, m) {
			t.Errorf("values.schema.json config.%s says %q; %s allows %s", key, m, v.Name, v.Allowed)
		}
	}
}

// sameValue compares a chart value with a default: durations by length
// ("10m" and "10m0s" agree), anything else as text.
func sameValue(a, b string) bool {
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	if errA == nil && errB == nil {
		return da == db
	}
	return a == b
}
