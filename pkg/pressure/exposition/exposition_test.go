package exposition

import (
	"reflect"
	"testing"
)

func TestOverridesCoverEveryName(t *testing.T) {
	n := DefaultNames()
	keys := map[string]bool{}
	for _, o := range n.Overrides() {
		if keys[o.Key] {
			t.Errorf("key %q twice", o.Key)
		}
		keys[o.Key] = true
		*o.Name = "renamed_" + o.Key
	}
	// Every field was reached through an override, so none keeps its default.
	seen := map[string]bool{}
	for _, name := range n.All() {
		if name[:8] != "renamed_" {
			t.Errorf("name %q has no override key", name)
		}
		if seen[name] {
			t.Errorf("two keys set %q", name)
		}
		seen[name] = true
	}
	if want := reflect.TypeFor[Names]().NumField(); len(seen) != want {
		t.Errorf("%d names have keys, Names has %d fields", len(seen), want)
	}
}
