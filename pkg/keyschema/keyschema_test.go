package keyschema

import (
	"errors"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

type config struct {
	rate    float64
	count   int
	wait    time.Duration
	on      bool
	mode    string
	a, b    string
	another string
}

func testKeys() []Key[config] {
	g := Group{Name: "letters", Doc: "the letters, one key each"}
	return []Key[config]{
		Enum("mode", func(c *config) *string { return &c.mode }, "x", "x", "p").Describe("a mode").
			Then(func(c *config, ctx *Context) { ctx.Policy = c.mode }),
		Float("rate", func(c *config) *float64 { return &c.rate }, 0.5, Between(0, 1)).Describe("a rate").InSimulator(),
		Int("count", func(c *config) *int { return &c.count }, 3, 1, 10).Describe("a count").For("p"),
		Duration("wait", func(c *config) *time.Duration { return &c.wait }, time.Second, 0, time.Minute, false).Describe("a wait"),
		Bool("on", func(c *config) *bool { return &c.on }, false).Describe("a switch").InSimulator(),
		String("a", func(c *config) *string { return &c.a }, "", "a letter", nil).Describe("a").InGroup(g),
		String("b", func(c *config) *string { return &c.b }, "", "a letter", nil).Describe("b").InGroup(g),
		String("another", func(c *config) *string { return &c.another }, "", "anything", nil).Describe("required").Require(),
	}
}

// A derived surface reads what a key is from its declaration, never from
// its documentation.
func TestConstructorsDeclareTheType(t *testing.T) {
	want := []Type{TypeEnum, TypeNumber, TypeWhole, TypeDuration, TypeBool, TypeText, TypeText, TypeText}
	for i, k := range testKeys() {
		if k.Type != want[i] {
			t.Errorf("%s: type %d, want %d", k.Name, k.Type, want[i])
		}
		if sim := k.Name == "rate" || k.Name == "on"; k.Simulated != sim {
			t.Errorf("%s: simulated %t, want %t", k.Name, k.Simulated, sim)
		}
	}
}

func apply(raw map[string]string) (config, error) {
	var c config
	r, err := NewReading(raw, []string{"ignored"}, Context{})
	if err != nil {
		return c, err
	}
	if _, err := Apply(r, testKeys(), nil, &c); err != nil {
		return c, r.Spelled(err)
	}
	return c, r.Unknown(func(key string) ([]string, []string) {
		if key == "elsewhere" {
			return []string{"other"}, nil
		}
		return nil, nil
	})
}

func TestApply(t *testing.T) {
	c, err := apply(map[string]string{"another": "z", "rate": " 0.25 ", "waitFromEnv": "2s", "mode": "p", "count": "4", "ignored": "1"})
	if err != nil || c.rate != 0.25 || c.wait != 2*time.Second || c.count != 4 || c.on {
		t.Fatalf("got %+v, %v", c, err)
	}
	for _, tt := range []struct {
		raw       map[string]string
		key, want string
	}{
		{map[string]string{}, "another", "required: required"},
		{map[string]string{"another": "z", "rate": "2"}, "rate", "a number in [0, 1]"},
		{map[string]string{"another": "z", "count": "4"}, "count", "only for policy p (this trigger's policy is x)"},
		{map[string]string{"another": "z", "waitFromEnv": "1h"}, "waitFromEnv", "at most 1m0s"},
		{map[string]string{"another": "z", "wait": "1s", "waitFromEnv": "1s"}, "waitFromEnv", "set either"},
		{map[string]string{"another": "z", "elsewhere": "1"}, "elsewhere", "only for source other"},
		{map[string]string{"another": "z", "typo": "1"}, "typo", "unknown key (the README's key tables list every key)"},
		{map[string]string{"another": "z", "raet": "1"}, "raet", `unknown key; did you mean "rate"?`},
		{map[string]string{"another": "z", "Wait": "1s"}, "Wait", `unknown key; did you mean "wait"?`},
		{map[string]string{"another": "z", "anothr": "1"}, "anothr", `unknown key; did you mean "another"?`},
	} {
		_, err := apply(tt.raw)
		var me *MetadataError
		if !errors.As(err, &me) || me.Key != tt.key || !strings.Contains(me.Error(), tt.want) {
			t.Errorf("%v: err = %v, want key %s saying %q", tt.raw, err, tt.key, tt.want)
		}
	}
}

func TestNewReadingRefusesHugeMetadata(t *testing.T) {
	raw := map[string]string{}
	for i := range MaxKeys + 1 {
		raw[strconv.Itoa(i)] = "v"
	}
	if _, err := NewReading(raw, nil, Context{}); err == nil || !strings.Contains(err.Error(), "at most 256 keys") {
		t.Errorf("err = %v", err)
	}
}

func TestTableGroupsAndColumns(t *testing.T) {
	var infos []Info
	for _, k := range testKeys() {
		infos = append(infos, k.Info)
	}
	got := Table(infos, Column{Header: "policies", Cell: func(i Info) string { return strings.Join(i.Policies, ", ") }})
	for _, want := range []string{
		"| key | policies | default | meaning |\n| --- | --- | --- | --- |\n",
		"| `rate` |  | `0.5` | a rate; a number in [0, 1] |\n",
		"| `count` | p | `3` | a count; a whole number >= 1 and <= 10 |\n",
		"| `a`, `b` |  | (none) | the letters, one key each |\n",
		"| `another` |  | (required) | required |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	doc := []byte("intro\n<!-- keys:t -->\nold\n<!-- /keys:t -->\n")
	out, changed, err := UpdateDocs(doc, []string{"t"}, func(string) (string, error) { return "new\n", nil })
	if err != nil || !changed || string(out) != "intro\n<!-- keys:t -->\nnew\n<!-- /keys:t -->\n" {
		t.Errorf("UpdateDocs: %q, %t, %v", out, changed, err)
	}
	if _, _, err := UpdateDocs(doc, []string{"u"}, nil); err == nil {
		t.Error("UpdateDocs accepted a doc without the table's markers")
	}
}

// The engine knows nothing of what its keys configure: it imports the
// standard library only, so any layer may declare keys with it.
func TestImportsNoProjectPackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.Contains(path, ".") {
				t.Errorf("%s imports %s; the engine imports the standard library only", f, path)
			}
		}
	}
}

// An unknown key names the key nearest to it, and only when it is near:
// the suggestion is a slip's correction, not a guess.
func TestNearest(t *testing.T) {
	known := []string{"activationMetric", "cpuQuery", "maxReplicas", "minReplicas", "sampleInterval", "source", "targetPressure"}
	for _, tt := range []struct{ key, want string }{
		{"sorce", "source"},
		{"soruce", "source"},                 // a swap is one edit
		{"TargetPressure", "targetPressure"}, // case is no edit
		{"tagetPresure", "targetPressure"},
		{"maxReplica", "maxReplicas"},
		{"mixReplicas", "maxReplicas"}, // a tie goes to the first in order
		{"cpuQuerry", "cpuQuery"},
		{"x", ""},
		{"policy", ""},
		{"serverAddress", ""},
		{strings.Repeat("source", 100), ""},
	} {
		got, ok := nearest(tt.key, known)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("nearest(%q) = %q, %t; want %q", tt.key, got, ok, tt.want)
		}
	}
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"abc", "abc", 0}, {"ab", "ba", 1}, {"ca", "abc", 3}, {"kitten", "sitting", 3}} {
		if d := editDistance(tt.a, tt.b); d != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.d)
		}
		if d := editDistance(tt.b, tt.a); d != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, d, tt.d)
		}
	}
}
