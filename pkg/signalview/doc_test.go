package signalview_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/barometer-scaler/barometer/pkg/signalview"
)

// docs/semantics.md lists /scale's fields in order ("HTTP shape of /scale");
// the list and the JSON of a view with every field present (stale, with a
// working set, an account and a recommendation) name the same fields in
// the same order.
func TestSemanticsListsEveryScaleField(t *testing.T) {
	doc, err := os.ReadFile("../../docs/semantics.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)with the fields in\s+this order \(` + "`pkg/signalview`" + `\):\n\n(.*?)\n\n`).FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/semantics.md: no field list under \"HTTP shape of /scale\"")
	}
	text := regexp.MustCompile(`\([^)]*\)| or null`).ReplaceAllString(string(block[1]), "")
	documented := regexp.MustCompile(`[A-Za-z]+`).FindAllString(text, -1)

	age := 1.5
	v := signalview.Signal{
		Compute: signalview.Compute{WorkingSetDemand: &age},
		Storage: signalview.Storage{
			Accounts:       []signalview.Account{{ProviderKey: "a"}},
			Recommendation: &signalview.Recommendation{Tree: "t"},
		},
		DataAgeSeconds: &age,
		Stale:          true,
		StaleReason:    "stale",
	}
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if served := jsonKeys(t, json.NewDecoder(bytes.NewReader(body))); !slices.Equal(documented, served) {
		t.Errorf("docs/semantics.md lists\n  %s\n/scale serves\n  %s", strings.Join(documented, ", "), strings.Join(served, ", "))
	}
}

// jsonKeys lists the keys of the JSON value next in dec, depth first, in
// order; of an array, its first element's.
func jsonKeys(t *testing.T, dec *json.Decoder) []string {
	t.Helper()
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k.(string))
			keys = append(keys, jsonKeys(t, dec)...)
		}
		_, _ = dec.Token()
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if inner := jsonKeys(t, dec); i == 0 {
				keys = append(keys, inner...)
			}
		}
		_, _ = dec.Token()
	}
	return keys
}
