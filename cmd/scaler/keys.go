package main

import (
	"fmt"
	"io"
	"os"

	"github.com/barometer-scaler/barometer/pkg/allow"
	"github.com/barometer-scaler/barometer/pkg/trigger"
)

// runKeys is `scaler keys`: the trigger-key reference, generated from the
// schema the server parses with. With a file, it rewrites the tables
// between that file's <!-- keys:NAME --> markers.
func runKeys(args []string, stdout io.Writer) error {
	schema := newSchema(allow.Default(), nil, trigger.Kube{}, nil)
	if len(args) == 0 {
		for _, name := range []string{trigger.TableCommon, trigger.TablePressure, trigger.TableSources, trigger.TablePolicies} {
			table, err := schema.Table(name)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(stdout, "%s keys:\n\n%s\n", name, table); err != nil {
				return err
			}
		}
		return nil
	}
	path := args[0]
	doc, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	out, changed, err := schema.UpdateDocs(doc)
	if err != nil {
		return fmt.Errorf("keys: %s: %w", path, err)
	}
	if !changed {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}
